/** The flags of `clankie fleet …`, shared by fleet.ts and fleet-deploy.ts (one file so neither imports the other). */
export interface FleetFlags {
  stateDir: string;
  controller: string | undefined;
  machine: string | undefined;
  ttl: string | undefined;
  identity: string | undefined;
  port: string | undefined;
  acceptNew: boolean;
  rollback: boolean;
  /** fleet remove: no confirmation. */
  yes?: boolean | undefined;
  knownHosts: string | undefined;
  /** The agent URL the deployed agent dials, when the controller's own differs from what the target reaches. */
  agentUrl: string | undefined;
  /** Where the agent is installed on the target (default ~/.clankie-agent). */
  remoteDir?: string | undefined;
}
