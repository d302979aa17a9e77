//go:build !amd64 && !arm64

package sandbox

// auditArch is 0 where toolhost has no system call table: the seccomp
// filter cannot be built there (seccompProgram says so).
const auditArch = 0

// onX86_64 is whether numbers with the x32 bit must be refused.
const onX86_64 = false

// sysnums is empty where toolhost has no system call table.
var sysnums [0]sysnum
