# Removes the Clankie Fleet node agent's Scheduled Task. Placeholder TASK_NAME in double braces.
$ErrorActionPreference = 'Stop'
$taskName = '{{TASK_NAME}}'
if (Get-ScheduledTask -TaskName $taskName -ErrorAction SilentlyContinue) {
  Stop-ScheduledTask -TaskName $taskName -ErrorAction SilentlyContinue
  Unregister-ScheduledTask -TaskName $taskName -Confirm:$false
  Write-Output "removed scheduled task '$taskName'"
} else {
  Write-Output "no scheduled task '$taskName'"
}
