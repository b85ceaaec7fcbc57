# Clankie Fleet node agent on Windows: a Scheduled Task that starts at this user's logon and
# runs as this user (the one who owns the panes: process environments, Herdr's socket), in
# their interactive session, restarted when it exits. Rendered by
# shared/service-install/render.ts; placeholders TASK_NAME, NODE, ARGUMENT_LINE and STATE_DIR
# in double braces (see deploy/README.md). Run it in the pane owner's own PowerShell, not elevated:
#   powershell -NoProfile -ExecutionPolicy Bypass -File install-agent.ps1
$ErrorActionPreference = 'Stop'
$taskName = '{{TASK_NAME}}'
$user = [System.Security.Principal.WindowsIdentity]::GetCurrent().Name
New-Item -ItemType Directory -Force -Path '{{STATE_DIR}}' | Out-Null
$action = New-ScheduledTaskAction -Execute '{{NODE}}' -Argument '{{ARGUMENT_LINE}}' -WorkingDirectory '{{STATE_DIR}}'
$trigger = New-ScheduledTaskTrigger -AtLogOn -User $user
$principal = New-ScheduledTaskPrincipal -UserId $user -LogonType Interactive -RunLevel Limited
$settings = New-ScheduledTaskSettingsSet -StartWhenAvailable -AllowStartIfOnBatteries -DontStopIfGoingOnBatteries `
  -ExecutionTimeLimit ([TimeSpan]::Zero) -RestartCount 999 -RestartInterval (New-TimeSpan -Minutes 1) -MultipleInstances IgnoreNew
Register-ScheduledTask -TaskName $taskName -Action $action -Trigger $trigger -Principal $principal -Settings $settings -Force | Out-Null
Start-ScheduledTask -TaskName $taskName
Write-Output "installed and started scheduled task '$taskName' for $user"
