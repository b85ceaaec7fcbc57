/**
 * One integer versions what an agent and a controller can do together; the agent
 * sends it when it registers. Bump it with a dated line when the contract grows.
 *
 * 1 (2026-11-30): register, heartbeat, seats; mailbox seats; Deliver, InspectSeat, ReadSession.
 */
export const CAPABILITY_VERSION = 1;
