package sandbox

import "sort"

//go:generate go run ./internal/gensysnum

// sysnum is one system call of this architecture's table
// (zsysnum_GOARCH.go).
type sysnum struct {
	name string
	nr   int
}

// syscallNumber returns a system call's number on this architecture and
// whether it exists there (some, like iopl or open, exist only on some
// architectures).
func syscallNumber(name string) (int, bool) {
	i := sort.Search(len(sysnums), func(i int) bool { return sysnums[i].name >= name })
	if i < len(sysnums) && sysnums[i].name == name {
		return sysnums[i].nr, true
	}
	return 0, false
}
