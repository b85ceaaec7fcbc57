/**
 * The PowerShell program the Windows host runs (windows-host.ts), and how to start it. It
 * compiles a small C# reader once at start (Add-Type), then answers one JSON line per request
 * line, each from a direct Win32 call rather than CIM (Win32_Process and Get-NetTCPConnection
 * go through WMI, tens to hundreds of ms a query): `processes` (a Toolhelp32 snapshot plus
 * GetProcessTimes per process), `tcp` (GetExtendedTcpTable: the exact tuple and its owning
 * pid) and `detail` (cwd, command line and environment from the PEB, with GetProcessTimes
 * on the same handle so the answer names one lifetime). The answers keep the field names of
 * Win32_Process and Get-NetTCPConnection, so the same parsers (windows-parse.ts) read both.
 * Never run here: no Windows machine is available; the C# is compiled by mcs in the tests.
 */

/**
 * The host's native reads, compiled once by Add-Type (and by mcs in the tests, for syntax and
 * types: the calls themselves need Windows). x64 offsets: PEB.ProcessParameters 0x20;
 * RTL_USER_PROCESS_PARAMETERS.CurrentDirectory.DosPath 0x38, CommandLine 0x70, Environment
 * 0x80, EnvironmentSize 0x3F0. MIB_TCPROW_OWNER_PID is 24 bytes, MIB_TCP6ROW_OWNER_PID 56.
 */
export const HOST_CSHARP = String.raw`
using System;
using System.Collections.Generic;
using System.Net;
using System.Runtime.InteropServices;
using System.Text;

public static class ClankieNative {
  [StructLayout(LayoutKind.Sequential)]
  struct PBI { public IntPtr ExitStatus; public IntPtr PebBaseAddress; public IntPtr AffinityMask; public IntPtr BasePriority; public IntPtr UniqueProcessId; public IntPtr InheritedFromUniqueProcessId; }
  [StructLayout(LayoutKind.Sequential, CharSet = CharSet.Unicode)]
  struct PROCESSENTRY32W { public uint dwSize; public uint cntUsage; public uint th32ProcessID; public IntPtr th32DefaultHeapID; public uint th32ModuleID; public uint cntThreads; public uint th32ParentProcessID; public int pcPriClassBase; public uint dwFlags; [MarshalAs(UnmanagedType.ByValTStr, SizeConst = 260)] public string szExeFile; }
  [DllImport("ntdll.dll")] static extern int NtQueryInformationProcess(IntPtr h, int cls, ref PBI pbi, int len, out int ret);
  [DllImport("kernel32.dll", SetLastError = true)] static extern IntPtr OpenProcess(int access, bool inherit, int pid);
  [DllImport("kernel32.dll", SetLastError = true)] static extern bool ReadProcessMemory(IntPtr h, IntPtr addr, byte[] buf, IntPtr size, out IntPtr read);
  [DllImport("kernel32.dll")] static extern bool CloseHandle(IntPtr h);
  [DllImport("kernel32.dll", SetLastError = true)] static extern bool IsWow64Process(IntPtr h, out bool wow);
  [DllImport("kernel32.dll", SetLastError = true)] static extern bool GetProcessTimes(IntPtr h, out long creation, out long exit, out long kernel, out long user);
  [DllImport("kernel32.dll", SetLastError = true)] static extern IntPtr CreateToolhelp32Snapshot(uint flags, uint pid);
  [DllImport("kernel32.dll", SetLastError = true, CharSet = CharSet.Unicode)] static extern bool Process32FirstW(IntPtr snap, ref PROCESSENTRY32W e);
  [DllImport("kernel32.dll", SetLastError = true, CharSet = CharSet.Unicode)] static extern bool Process32NextW(IntPtr snap, ref PROCESSENTRY32W e);
  [DllImport("iphlpapi.dll", SetLastError = true)] static extern uint GetExtendedTcpTable(IntPtr table, ref int size, bool sort, int af, int tableClass, uint reserved);

  const int QUERY_INFORMATION = 0x0400, VM_READ = 0x0010, QUERY_LIMITED = 0x1000;

  static byte[] Read(IntPtr h, IntPtr at, int n) {
    var buf = new byte[n]; IntPtr got;
    if (n == 0) return buf;
    if (!ReadProcessMemory(h, at, buf, (IntPtr)n, out got) || (long)got != n) throw new InvalidOperationException("read_failed");
    return buf;
  }

  static Dictionary<string, object> Fail(int pid, string error, string message) {
    var d = new Dictionary<string, object>(); d["ProcessId"] = pid; d["Error"] = error; d["Message"] = message; return d;
  }

  /** Every process: pid, parent, image name, and its creation FILETIME (null when Windows will not open it). */
  public static List<Dictionary<string, object>> Processes() {
    var rows = new List<Dictionary<string, object>>();
    IntPtr snap = CreateToolhelp32Snapshot(2, 0);
    if (snap == (IntPtr)(-1)) throw new InvalidOperationException("CreateToolhelp32Snapshot failed with " + Marshal.GetLastWin32Error());
    try {
      var e = new PROCESSENTRY32W(); e.dwSize = (uint)Marshal.SizeOf(typeof(PROCESSENTRY32W));
      for (bool more = Process32FirstW(snap, ref e); more; more = Process32NextW(snap, ref e)) {
        var d = new Dictionary<string, object>();
        d["ProcessId"] = (int)e.th32ProcessID; d["ParentProcessId"] = (int)e.th32ParentProcessID; d["Name"] = e.szExeFile; d["CreationFileTime"] = null;
        IntPtr h = OpenProcess(QUERY_LIMITED, false, (int)e.th32ProcessID);
        if (h != IntPtr.Zero) {
          long c, x, k, u;
          if (GetProcessTimes(h, out c, out x, out k, out u)) d["CreationFileTime"] = c.ToString();
          CloseHandle(h);
        }
        rows.Add(d);
      }
    } finally { CloseHandle(snap); }
    return rows;
  }

  static int Port(int v) { return ((v & 0xff) << 8) | ((v >> 8) & 0xff); }

  /** GetExtendedTcpTable (TCP_TABLE_OWNER_PID_ALL, IPv4 then IPv6): rows in the state, of the pid, or between the two ports asked (-1: any). */
  public static List<Dictionary<string, object>> Tcp(int state, int pid, int portA, int portB) {
    var rows = new List<Dictionary<string, object>>();
    foreach (int af in new int[] { 2, 23 }) {
      int size = 0;
      IntPtr buf = IntPtr.Zero;
      GetExtendedTcpTable(IntPtr.Zero, ref size, false, af, 5, 0);
      try {
        for (int tries = 0; ; tries++) {
          buf = Marshal.AllocHGlobal(size);
          uint rc = GetExtendedTcpTable(buf, ref size, false, af, 5, 0);
          if (rc == 0) break;
          Marshal.FreeHGlobal(buf); buf = IntPtr.Zero;
          // 122: ERROR_INSUFFICIENT_BUFFER, the table grew since the size was asked.
          if (rc != 122 || tries > 3) throw new InvalidOperationException("GetExtendedTcpTable failed with " + rc);
        }
        int n = Marshal.ReadInt32(buf);
        int rowSize = af == 2 ? 24 : 56;
        for (int i = 0; i < n; i++) {
          IntPtr r = new IntPtr(buf.ToInt64() + 4 + (long)i * rowSize);
          int st, owner, lport, rport; string la, ra;
          if (af == 2) {
            st = Marshal.ReadInt32(r, 0);
            la = new IPAddress((long)(uint)Marshal.ReadInt32(r, 4)).ToString(); lport = Port(Marshal.ReadInt32(r, 8));
            ra = new IPAddress((long)(uint)Marshal.ReadInt32(r, 12)).ToString(); rport = Port(Marshal.ReadInt32(r, 16));
            owner = Marshal.ReadInt32(r, 20);
          } else {
            byte[] a = new byte[16]; byte[] b = new byte[16];
            Marshal.Copy(r, a, 0, 16); Marshal.Copy(new IntPtr(r.ToInt64() + 24), b, 0, 16);
            la = new IPAddress(a).ToString(); lport = Port(Marshal.ReadInt32(r, 20));
            ra = new IPAddress(b).ToString(); rport = Port(Marshal.ReadInt32(r, 44));
            st = Marshal.ReadInt32(r, 48); owner = Marshal.ReadInt32(r, 52);
          }
          if (st != state || (pid >= 0 && owner != pid)) continue;
          if (portA >= 0 && !((lport == portA && rport == portB) || (lport == portB && rport == portA))) continue;
          var d = new Dictionary<string, object>();
          d["LocalAddress"] = la; d["LocalPort"] = lport; d["RemoteAddress"] = ra; d["RemotePort"] = rport; d["State"] = st; d["OwningProcess"] = owner;
          rows.Add(d);
        }
      } finally { if (buf != IntPtr.Zero) Marshal.FreeHGlobal(buf); }
    }
    return rows;
  }

  static string UnicodeAt(IntPtr h, byte[] rupp, int at) {
    int len = BitConverter.ToUInt16(rupp, at);
    return Encoding.Unicode.GetString(Read(h, (IntPtr)BitConverter.ToInt64(rupp, at + 8), len));
  }

  /** One process's cwd, command line and environment from its PEB, with the creation time of the same handle. */
  public static Dictionary<string, object> Detail(int pid) {
    IntPtr h = OpenProcess(QUERY_INFORMATION | VM_READ, false, pid);
    if (h == IntPtr.Zero) {
      int e = Marshal.GetLastWin32Error();
      return Fail(pid, e == 5 ? "access_denied" : "gone", "OpenProcess failed with " + e);
    }
    try {
      bool wow; IsWow64Process(h, out wow);
      if (wow) return Fail(pid, "wow64", "a 32-bit process: its PEB layout differs");
      long created, exited, k, u;
      if (!GetProcessTimes(h, out created, out exited, out k, out u)) return Fail(pid, "gone", "GetProcessTimes failed");
      var pbi = new PBI(); int ret;
      if (NtQueryInformationProcess(h, 0, ref pbi, Marshal.SizeOf(pbi), out ret) != 0) return Fail(pid, "read_failed", "NtQueryInformationProcess failed");
      IntPtr pp = (IntPtr)BitConverter.ToInt64(Read(h, new IntPtr(pbi.PebBaseAddress.ToInt64() + 0x20), 8), 0);
      byte[] rupp = Read(h, pp, 0x3F8);
      long envSize = BitConverter.ToInt64(rupp, 0x3F0);
      if (envSize <= 0 || envSize > 4 * 1024 * 1024) return Fail(pid, "read_failed", "implausible environment size " + envSize);
      string block = Encoding.Unicode.GetString(Read(h, (IntPtr)BitConverter.ToInt64(rupp, 0x80), (int)envSize));
      var vars = new List<string>();
      foreach (var v in block.Split('\0')) if (v.Length > 0) vars.Add(v);
      var d = new Dictionary<string, object>();
      d["ProcessId"] = pid; d["CreationFileTime"] = created.ToString(); d["Cwd"] = UnicodeAt(h, rupp, 0x38);
      d["CommandLine"] = UnicodeAt(h, rupp, 0x70); d["Environment"] = vars.ToArray();
      return d;
    } catch (InvalidOperationException ex) {
      return Fail(pid, "read_failed", ex.Message);
    } finally { CloseHandle(h); }
  }
}`;

const SCRIPT = `
$ErrorActionPreference = 'Stop'
$utf8 = New-Object System.Text.UTF8Encoding $false
[Console]::InputEncoding = $utf8
[Console]::OutputEncoding = $utf8
Add-Type -TypeDefinition @'
${HOST_CSHARP}
'@
[Console]::Out.WriteLine('{"ready":true}')
[Console]::Out.Flush()
while ($null -ne ($line = [Console]::In.ReadLine())) {
  $id = 0
  try {
    $q = $line | ConvertFrom-Json
    $id = [int]$q.id
    switch ($q.op) {
      'processes' { $data = [ClankieNative]::Processes() }
      'tcp' {
        $state = if ($q.state -eq 'Listen') { 2 } else { 5 }
        $pid_ = if ($null -ne $q.pid) { [int]$q.pid } else { -1 }
        $a = -1; $b = -1
        if ($null -ne $q.ports) { $a = [int]$q.ports[0]; $b = [int]$q.ports[1] }
        $data = [ClankieNative]::Tcp($state, $pid_, $a, $b)
      }
      'detail' { $data = [ClankieNative]::Detail([int]$q.pid) }
      default { throw "unknown op $($q.op)" }
    }
    $json = ConvertTo-Json -InputObject $data -Compress -Depth 4
    [Console]::Out.WriteLine('{"id":' + $id + ',"ok":true,"data":' + $json + '}')
  } catch {
    $msg = ConvertTo-Json -InputObject ([string]$_.Exception.Message) -Compress
    [Console]::Out.WriteLine('{"id":' + $id + ',"ok":false,"error":' + $msg + '}')
  }
  [Console]::Out.Flush()
}
`;

/** powershell.exe arguments that run the host program; -EncodedCommand keeps stdin free for requests. */
export function powerShellHostArgs(): string[] {
  return [
    "-NoProfile",
    "-NonInteractive",
    "-ExecutionPolicy",
    "Bypass",
    "-EncodedCommand",
    Buffer.from(SCRIPT, "utf16le").toString("base64"),
  ];
}

export const POWERSHELL_HOST_SCRIPT = SCRIPT;
