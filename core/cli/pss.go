package cli

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// treePSS sums the proportional set size (PSS: each shared page counted
// once across the processes that share it) of a process and all its
// descendants, from /proc: what one warm group costs the machine (its
// sandbox's launcher and init, the plugin process, the workers). It
// answers the total in bytes and the number of processes.
func treePSS(root int) (int64, int, error) {
	return procChildren().pss(root)
}

// children maps each process to its children, from one scan of /proc.
type children map[int][]int

func procChildren() children {
	c := children{}
	stats, _ := filepath.Glob("/proc/[0-9]*/stat")
	for _, st := range stats {
		b, err := os.ReadFile(st)
		if err != nil {
			continue // gone meanwhile
		}
		// pid (comm) state ppid ...: comm may hold spaces and parentheses.
		s := string(b)
		end := strings.LastIndexByte(s, ')')
		if end < 0 {
			continue
		}
		f := strings.Fields(s[end+1:])
		if len(f) < 2 {
			continue
		}
		pid, _ := strconv.Atoi(strings.Fields(s)[0])
		ppid, _ := strconv.Atoi(f[1])
		c[ppid] = append(c[ppid], pid)
	}
	return c
}

// pss is treePSS over the scanned tree.
func (c children) pss(root int) (int64, int, error) {
	var total int64
	n := 0
	queue := []int{root}
	for len(queue) > 0 {
		pid := queue[0]
		queue = queue[1:]
		queue = append(queue, c[pid]...)
		kb, err := pssKB(pid)
		if err != nil {
			if pid == root {
				return 0, 0, err
			}
			continue
		}
		total += kb << 10
		n++
	}
	return total, n, nil
}

// pssKB reads a process's Pss line from /proc/PID/smaps_rollup.
func pssKB(pid int) (int64, error) {
	f, err := os.Open(fmt.Sprintf("/proc/%d/smaps_rollup", pid))
	if err != nil {
		return 0, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), "Pss:"); ok {
			return strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
		}
	}
	return 0, fmt.Errorf("no Pss in /proc/%d/smaps_rollup", pid)
}
