package gpython

import (
	"github.com/go-python/gpython/py"
	"github.com/go-python/gpython/vm"
)

// Names of the builtins the rewritten % operators call.
const (
	modBuiltin  = "__toolhost_mod__"
	imodBuiltin = "__toolhost_imod__"
)

// relJumps take a delta from the next instruction; absJumps a code offset.
var (
	relJumps = map[vm.OpCode]bool{vm.JUMP_FORWARD: true, vm.FOR_ITER: true, vm.SETUP_LOOP: true,
		vm.SETUP_EXCEPT: true, vm.SETUP_FINALLY: true, vm.SETUP_WITH: true}
	absJumps = map[vm.OpCode]bool{vm.JUMP_IF_FALSE_OR_POP: true, vm.JUMP_IF_TRUE_OR_POP: true, vm.JUMP_ABSOLUTE: true,
		vm.POP_JUMP_IF_FALSE: true, vm.POP_JUMP_IF_TRUE: true, vm.CONTINUE_LOOP: true}
)

// instr is one decoded instruction.
type instr struct {
	at   int
	op   vm.OpCode
	arg  int
	size int
}

// rewriteModulo makes every % of a code object a call of toolhost's
// operator (percentMod): gpython's str % formats with Go's fmt ("%s" % None
// is '{}'), and its operators are Go methods toolhost cannot replace.
// BINARY_MODULO (one byte) becomes LOAD_GLOBAL __toolhost_mod__,
// ROT_THREE, CALL_FUNCTION 2 (seven bytes); jumps and the line table are
// moved to match. Code with EXTENDED_ARG (a function past 65,535 names or
// bytes) is left as it is.
func rewriteModulo(code *py.Code) {
	var ins []instr
	count := 0
	b := code.Code
	for i := 0; i < len(b); {
		op := vm.OpCode(b[i])
		in := instr{at: i, op: op, size: 1}
		if op.HAS_ARG() {
			if i+2 >= len(b) {
				return
			}
			in.arg, in.size = int(b[i+1])|int(b[i+2])<<8, 3
		}
		if op == vm.EXTENDED_ARG {
			return
		}
		if op == vm.BINARY_MODULO || op == vm.INPLACE_MODULO {
			count++
		}
		ins = append(ins, in)
		i += in.size
	}
	if count == 0 {
		return
	}
	// newAt maps an old offset to its new one (offsets past the end too).
	shift := make([]int, len(b)+1)
	extra := 0
	for _, in := range ins {
		for j := in.at; j < in.at+in.size; j++ {
			shift[j] = extra
		}
		if in.op == vm.BINARY_MODULO || in.op == vm.INPLACE_MODULO {
			extra += 6
		}
	}
	shift[len(b)] = extra
	newAt := func(o int) int { return o + shift[o] }
	names := code.Names
	nameIndex := func(name string) int {
		for i, n := range names {
			if n == name {
				return i
			}
		}
		names = append(names, name)
		return len(names) - 1
	}
	mod, imod := nameIndex(modBuiltin), nameIndex(imodBuiltin)
	if imod > 0xffff {
		return
	}
	out := make([]byte, 0, len(b)+extra)
	emit := func(op vm.OpCode, arg int) bool {
		out = append(out, byte(op))
		if op.HAS_ARG() {
			if arg < 0 || arg > 0xffff {
				return false
			}
			out = append(out, byte(arg), byte(arg>>8))
		}
		return true
	}
	for _, in := range ins {
		ok := true
		switch {
		case in.op == vm.BINARY_MODULO || in.op == vm.INPLACE_MODULO:
			name := mod
			if in.op == vm.INPLACE_MODULO {
				name = imod
			}
			ok = emit(vm.LOAD_GLOBAL, name) && emit(vm.ROT_THREE, 0) && emit(vm.CALL_FUNCTION, 2)
		case relJumps[in.op]:
			target := in.at + in.size + in.arg
			if target > len(b) {
				return
			}
			ok = emit(in.op, newAt(target)-(newAt(in.at)+in.size))
		case absJumps[in.op]:
			if in.arg > len(b) {
				return
			}
			ok = emit(in.op, newAt(in.arg))
		default:
			ok = emit(in.op, in.arg)
		}
		if !ok {
			return
		}
	}
	// The line table: (address increment, line increment) pairs.
	var lnotab []byte
	addr, newPrev := 0, 0
	for i := 0; i+1 < len(code.Lnotab); i += 2 {
		addr += int(code.Lnotab[i])
		if addr > len(b) {
			return
		}
		ad, ld := newAt(addr)-newPrev, int(code.Lnotab[i+1])
		newPrev = newAt(addr)
		for ad > 255 {
			lnotab = append(lnotab, 255, 0)
			ad -= 255
		}
		lnotab = append(lnotab, byte(ad), byte(ld))
	}
	code.Code, code.Names, code.Lnotab = string(out), names, string(lnotab)
	code.Stacksize++
}
