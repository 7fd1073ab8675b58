// Package hostproc finds this machine's processes by what they do rather
// than by name: which processes hold a listening TCP socket. Providers use
// it to report a gateway that runs on this machine (APISIX on a plain
// nginx shows as "nginx", the same name as a service under test) as
// infrastructure by pid. It also reads the fields of /proc/PID/stat that
// providers need (ReadStat).
package hostproc

import (
	"github.com/benchflow/benchflow/engine/procfs"

	"bufio"
	"encoding/hex"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
)

// Listeners returns the pids of the processes holding a TCP socket that
// listens on port, at ip or at the wildcard address (nil ip: any address),
// sorted. nginx's master and all its workers hold the same socket, so all
// of them are returned. Sockets of processes this user may not inspect are
// skipped silently (the result may then be empty).
func Listeners(ip net.IP, port int) ([]int, error) {
	if port <= 0 || port > 65535 {
		return nil, fmt.Errorf("port %d out of range", port)
	}
	inodes := map[string]bool{}
	for _, f := range []string{"net/tcp", "net/tcp6"} {
		if err := listeningInodes(filepath.Join(procfs.Root, f), ip, port, inodes); err != nil && !os.IsNotExist(err) {
			return nil, err
		}
	}
	if len(inodes) == 0 {
		return nil, nil
	}
	all, err := procfs.PIDs("")
	if err != nil {
		return nil, err
	}
	var pids []int
	for _, pid := range all {
		if pid <= 0 {
			continue
		}
		fds, err := os.ReadDir(procfs.Path(pid, "fd"))
		if err != nil {
			continue // gone, or not ours to read
		}
		for _, fd := range fds {
			l, err := os.Readlink(filepath.Join(procfs.Path(pid, "fd"), fd.Name()))
			if err != nil {
				continue
			}
			if in, ok := strings.CutPrefix(l, "socket:["); ok && inodes[strings.TrimSuffix(in, "]")] {
				pids = append(pids, pid)
				break
			}
		}
	}
	sort.Ints(pids)
	return pids, nil
}

// listeningInodes adds the inodes of the sockets in LISTEN state (0A) on
// port at ip (or the wildcard) from one /proc/net/tcp{,6} table.
func listeningInodes(path string, ip net.IP, port int, into map[string]bool) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	first := true
	for sc.Scan() {
		if first { // header
			first = false
			continue
		}
		fs := strings.Fields(sc.Text())
		if len(fs) < 10 || fs[3] != "0A" {
			continue
		}
		host, p, ok := strings.Cut(fs[1], ":")
		if !ok {
			continue
		}
		pn, err := strconv.ParseUint(p, 16, 16)
		if err != nil || int(pn) != port {
			continue
		}
		lip, err := parseHexIP(host)
		if err != nil {
			continue
		}
		if ip != nil && !lip.IsUnspecified() && !lip.Equal(ip) {
			continue
		}
		into[fs[9]] = true
	}
	return sc.Err()
}

// parseHexIP decodes /proc/net/tcp's address: an IPv4 address as one
// little-endian 32-bit word, an IPv6 address as four of them.
func parseHexIP(s string) (net.IP, error) {
	b, err := hex.DecodeString(s)
	if err != nil || (len(b) != 4 && len(b) != 16) {
		return nil, fmt.Errorf("bad address %q", s)
	}
	for i := 0; i < len(b); i += 4 {
		b[i], b[i+1], b[i+2], b[i+3] = b[i+3], b[i+2], b[i+1], b[i]
	}
	ip := net.IP(b)
	if v4 := ip.To4(); v4 != nil {
		return v4, nil
	}
	return ip, nil
}

// Comm returns a process's name as the kernel shows it, without leading
// or trailing white space, or "" when the process is gone. It is read from
// /proc/PID/stat (ReadStat), which holds the same bytes as /proc/PID/comm
// without its final newline.
func Comm(pid int) string {
	st, err := ReadStat(procfs.Root, pid)
	if err != nil {
		return ""
	}
	return strings.TrimSpace(st.Comm)
}
