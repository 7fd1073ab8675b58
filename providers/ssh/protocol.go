package ssh

// The controller drives the remote helper (`benchflow remote-helper`) over
// the SSH session's stdin and stdout: one JSON object a line each way.
// Every request carries an id; the helper answers each with a response of
// the same id, in any order. Argument vectors travel as JSON arrays and are
// executed directly (execve), never through a shell.

// request is one line the controller sends.
type request struct {
	ID int    `json:"id"`
	Op string `json:"op"` // see the op* constants
	// Path is the file or folder of mkdir, write and remove.
	Path string `json:"path,omitempty"`
	Data []byte `json:"data,omitempty"` // write: the content
	Mode uint32 `json:"mode,omitempty"` // write: the file mode; mkdir: the folder's
	// Argv, Env and Dir are start's process; Marker its BENCHFLOW_*
	// variables, Log the prefix of its two log files.
	Argv   []string          `json:"argv,omitempty"`
	Env    map[string]string `json:"env,omitempty"`
	Dir    string            `json:"dir,omitempty"`
	Marker map[string]string `json:"marker,omitempty"`
	Log    string            `json:"log,omitempty"`
	// PID names the process of status, stop and procs (the leader of its
	// process group); PIDs the process groups kill stops.
	PID  int   `json:"pid,omitempty"`
	PIDs []int `json:"pids,omitempty"`
	// StopMS is how long stop waits after SIGTERM before SIGKILL.
	StopMS int64 `json:"stop_ms,omitempty"`
	// Base is the folder gc looks for run folders in.
	Base string `json:"base,omitempty"`
	// Collect is what collect_start samples; Sampler names the sampler
	// collect_stop ends.
	Collect *collectSpec `json:"collect,omitempty"`
	Sampler int          `json:"sampler,omitempty"`
	Offset  int          `json:"offset,omitempty"` // collect_stop: the rows already returned
	// IP is env's: the host's address benchflow reached it at (its NIC
	// is the one recorded).
	IP string `json:"ip,omitempty"`
}

// response is one line the helper sends.
type response struct {
	ID int `json:"id"`
	// Event, with ID 0, is news the helper sends unasked: "exit" (PID
	// and Exit say which process ended and how).
	Event string `json:"event,omitempty"`
	Error string `json:"error,omitempty"`
	// NotFound marks a start whose program does not exist on the host.
	NotFound bool          `json:"not_found,omitempty"`
	Data     []byte        `json:"data,omitempty"` // read: the content
	Hello    *hello        `json:"hello,omitempty"`
	PID      int           `json:"pid,omitempty"`
	Exit     *exitStatus   `json:"exit,omitempty"`
	Left     []string      `json:"left,omitempty"`
	Procs    []remoteProc  `json:"procs,omitempty"`
	Env      *hostEnv      `json:"env,omitempty"`
	Leftover []leftover    `json:"leftover,omitempty"`
	Folders  []runFolder   `json:"folders,omitempty"`
	Helpers  []otherHelper `json:"helpers,omitempty"`
	// Sampler is the id collect_start gave its sampler; Collected what
	// collect_stop returns.
	Sampler   int        `json:"sampler,omitempty"`
	Collected *collected `json:"collected,omitempty"`
}

const (
	opHello  = "hello"  // → Hello
	opPing   = "ping"   // keeps the helper from its idle exit
	opMkdir  = "mkdir"  // Path (made, never reused), Mode
	opWrite  = "write"  // Path, Data, Mode
	opStart  = "start"  // Argv, Env, Dir, Marker, Log → PID
	opStatus = "status" // PID → Exit (nil while it runs)
	opStop   = "stop"   // PID, StopMS → Left
	opRemove = "remove" // Path (a run folder this helper made, or one gc found)
	opRead   = "read"   // Path → Data (at most maxRead bytes from its end)
	opEnv    = "env"    // → Env
	opProcs  = "procs"  // PID → Procs
	opGC     = "gc"     // Base → Leftover, Folders, Helpers
	opKill   = "kill"   // PIDs: process groups (and helpers) to stop
	// opVersion runs Argv as envinfo.ServiceVersion does → Data (its
	// output, also with Error).
	opVersion = "version"
	// opCollectStart starts sampling the host's /proc for a collect step
	// (Collect) → Sampler; opCollectStop (Sampler, Offset) ends it →
	// Collected, in pages (Collected.More). Nothing travels between the
	// two: the rows come back at the end.
	opCollectStart = "collect_start"
	opCollectStop  = "collect_stop"
)

// maxRead bounds what read returns (the end of a log).
const maxRead = 1 << 20

// hello describes the helper and its host.
type hello struct {
	SHA256 string `json:"sha256"` // of the helper's own executable
	OS     string `json:"os"`
	Arch   string `json:"arch"`
	PID    int    `json:"pid"`
	UID    int    `json:"uid"`
	Home   string `json:"home"`
	Host   string `json:"host"` // hostname
	// Owner is the helper's own "pid:start" (its BENCHFLOW_HELPER marker).
	Owner string `json:"owner"`
	// BootID is the host kernel's /proc/sys/kernel/random/boot_id: equal
	// to this machine's when the host shares its kernel (a network
	// namespace or a container on it).
	BootID string `json:"boot_id,omitempty"`
}

// exitStatus is how a started process ended.
type exitStatus struct {
	Status string   `json:"status"` // "exit status 1", "signal: killed"
	Code   int      `json:"code"`   // -1 for a signal
	Log    string   `json:"log,omitempty"`
	Tail   []string `json:"tail,omitempty"`
}

// remoteProc is one process of a service on the host.
type remoteProc struct {
	PID  int    `json:"pid"`
	Comm string `json:"comm"`
}

// hostEnv is the host's environment, as the manifest records it.
type hostEnv struct {
	Hostname string `json:"hostname"`
	Kernel   string `json:"kernel"`
	OS       string `json:"os"`
	CPU      string `json:"cpu"`
	Cores    int    `json:"cores"`
	MemoryMB int64  `json:"memory_mb"`
	// Sysctls are those the local manifest records (envinfo.Sysctls).
	Sysctls map[string]string `json:"sysctls,omitempty"`
	// NIC holds the host's address of the SSH connection.
	NIC *nicInfo `json:"nic,omitempty"`
}

// leftover is a process gc found: a service some helper started.
type leftover struct {
	PID, PGID   int
	Comm        string
	Run         string
	Service     string
	Owner       string // the controller's BENCHFLOW_OWNER
	HelperAlive bool   // the helper that started it still runs
}

// runFolder is a per-run folder gc found.
type runFolder struct {
	Path        string
	Run         string
	Owner       string
	HelperAlive bool
}

// otherHelper is another remote helper running on the host.
type otherHelper struct {
	PID   int
	Owner string // the controller's owner labels it was started with
}
