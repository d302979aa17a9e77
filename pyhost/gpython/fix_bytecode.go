package gpython

import (
	"strings"

	"github.com/go-python/gpython/py"
	"github.com/go-python/gpython/vm"
)

// Names of the builtins the rewritten % operators call.
const (
	modBuiltin  = "__toolhost_mod__"
	imodBuiltin = "__toolhost_imod__"
)

// opKind says how an instruction is rewritten.
type opKind int

const (
	// binaryCall replaces the instruction: LOAD_GLOBAL f, ROT_THREE,
	// CALL_FUNCTION 2 (f(TOS1, TOS)).
	binaryCall opKind = iota
	// unaryCall replaces it: LOAD_GLOBAL f, ROT_TWO, CALL_FUNCTION 1.
	unaryCall
	// keyCheck goes before it, which keeps its place: LOAD_GLOBAL f,
	// ROT_TWO, CALL_FUNCTION 1 (TOS = f(TOS)).
	keyCheck
	// storeCheck goes before STORE_SUBSCR: DUP_TOP_TWO, LOAD_GLOBAL f,
	// ROT_THREE, CALL_FUNCTION 2, POP_TOP (f(container, key) raises or
	// gives None).
	storeCheck
	// storeMap replaces STORE_MAP (an item of a dict display): BUILD_TUPLE
	// 2, LOAD_GLOBAL f, ROT_THREE, CALL_FUNCTION 2 (f(dict, (value, key))
	// stores and gives the dict back).
	storeMap
	// mapAdd replaces MAP_ADD (an item of a dict comprehension, whose dict
	// saveDict keeps in a local): BUILD_TUPLE 2, LOAD_GLOBAL f, ROT_TWO,
	// LOAD_FAST dict, CALL_FUNCTION 2, POP_TOP (f((value, key), dict)).
	mapAdd
	// saveDict follows the BUILD_MAP that starts a dict comprehension:
	// DUP_TOP, STORE_FAST dict.
	saveDict
	// callOrdered replaces a call with keyword or star arguments:
	// BUILD_TUPLE n, LOAD_CONST argc, BUILD_TUPLE 3, LOAD_GLOBAL f,
	// ROT_TWO, CALL_FUNCTION 1 (f((function, arguments, argc)) makes the
	// call with its keywords in order).
	callOrdered
	// suffixCall follows the instruction, which keeps its place:
	// LOAD_GLOBAL f, ROT_TWO, CALL_FUNCTION 1 (TOS = f(TOS)).
	suffixCall
	// buildSet replaces BUILD_SET n: BUILD_TUPLE n, LOAD_GLOBAL f,
	// ROT_TWO, CALL_FUNCTION 1 (f(items) makes toolhost's set); the
	// BUILD_SET a set comprehension starts with is followed by DUP_TOP,
	// STORE_FAST set (its set kept in a local, as saveDict's dict).
	buildSet
	buildSetSave
	// setAdd replaces SET_ADD (an item of a set comprehension):
	// LOAD_GLOBAL f, ROT_TWO, LOAD_FAST set, CALL_FUNCTION 2, POP_TOP
	// (f(item, set)).
	setAdd
	// dottedLoad replaces the load of a dotted decorator's name (@x.setter:
	// gpython's parser makes the name "x.setter", which is never bound):
	// the load of its first part, then the load of each other part as
	// loadAttr's.
	dottedLoad
	// unpackCheck goes before UNPACK_SEQUENCE and UNPACK_EX, which keep
	// their place: LOAD_GLOBAL f, ROT_TWO, LOAD_CONST n, CALL_FUNCTION 2
	// (TOS = f(TOS, n), n the instruction's argument, with 1<<16 for
	// UNPACK_EX).
	unpackCheck
	// loadAttr replaces LOAD_ATTR name: LOAD_GLOBAL f, ROT_TWO, LOAD_CONST
	// name, CALL_FUNCTION 2 (f(obj, name)).
	loadAttr
)

// loopEndSize is the size of the check a loop's end starts with:
// LOAD_GLOBAL loopEndBuiltin, CALL_FUNCTION 0, POP_TOP.
const loopEndSize = 7

// opRewrite is what an instruction becomes: a call of the builtin named.
type opRewrite struct {
	kind opKind
	name string
}

// extra is how many bytes the rewrite adds to an instruction of size.
func (r opRewrite) extra(size int) int {
	switch r.kind {
	case keyCheck:
		return 7
	case storeCheck:
		return 9
	case storeMap:
		return 10 - size
	case mapAdd:
		return 14 - size
	case saveDict:
		return 4
	case callOrdered:
		return 16 - size
	case suffixCall:
		return 7
	case buildSet:
		return 7
	case buildSetSave:
		return 11
	case setAdd:
		return 11 - size
	case dottedLoad:
		return 10 * strings.Count(r.name, ".")
	case unpackCheck:
		return 10
	case loadAttr:
		return 10 - size
	}
	return 7 - size
}

// opRewrites are the operators whose gpython code answers otherwise than
// CPython for some operands (fix_operators.go), by opcode.
var opRewrites = map[vm.OpCode]opRewrite{
	vm.BINARY_MODULO:        {binaryCall, modBuiltin},
	vm.INPLACE_MODULO:       {binaryCall, imodBuiltin},
	vm.BINARY_ADD:           {binaryCall, "__toolhost_add__"},
	vm.INPLACE_ADD:          {binaryCall, "__toolhost_iadd__"},
	vm.BINARY_SUBTRACT:      {binaryCall, "__toolhost_sub__"},
	vm.INPLACE_SUBTRACT:     {binaryCall, "__toolhost_isub__"},
	vm.BINARY_MULTIPLY:      {binaryCall, "__toolhost_mul__"},
	vm.INPLACE_MULTIPLY:     {binaryCall, "__toolhost_imul__"},
	vm.BINARY_TRUE_DIVIDE:   {binaryCall, "__toolhost_truediv__"},
	vm.INPLACE_TRUE_DIVIDE:  {binaryCall, "__toolhost_truediv__"},
	vm.BINARY_FLOOR_DIVIDE:  {binaryCall, "__toolhost_floordiv__"},
	vm.INPLACE_FLOOR_DIVIDE: {binaryCall, "__toolhost_floordiv__"},
	vm.BINARY_POWER:         {binaryCall, "__toolhost_pow__"},
	vm.INPLACE_POWER:        {binaryCall, "__toolhost_pow__"},
	vm.BINARY_LSHIFT:        {binaryCall, "__toolhost_lshift__"},
	vm.INPLACE_LSHIFT:       {binaryCall, "__toolhost_lshift__"},
	vm.BINARY_RSHIFT:        {binaryCall, "__toolhost_rshift__"},
	vm.INPLACE_RSHIFT:       {binaryCall, "__toolhost_rshift__"},
	vm.BINARY_AND:           {binaryCall, "__toolhost_and__"},
	vm.INPLACE_AND:          {binaryCall, "__toolhost_iand__"},
	vm.BINARY_OR:            {binaryCall, "__toolhost_or__"},
	vm.INPLACE_OR:           {binaryCall, "__toolhost_ior__"},
	vm.BINARY_XOR:           {binaryCall, "__toolhost_xor__"},
	vm.INPLACE_XOR:          {binaryCall, "__toolhost_ixor__"},
	vm.UNARY_NEGATIVE:       {unaryCall, "__toolhost_neg__"},
	vm.UNARY_POSITIVE:       {unaryCall, "__toolhost_pos__"},
	vm.UNARY_INVERT:         {unaryCall, "__toolhost_invert__"},
	vm.STORE_MAP:            {storeMap, "__toolhost_store_map__"},
	vm.MAP_ADD:              {mapAdd, "__toolhost_map_add__"},
	vm.STORE_SUBSCR:         {storeCheck, "__toolhost_store__"},
	vm.DELETE_SUBSCR:        {storeCheck, delCheckBuiltin},
	vm.GET_ITER:             {unaryCall, "__toolhost_iter__"},
	vm.UNPACK_SEQUENCE:      {unpackCheck, unpackBuiltin},
	vm.UNPACK_EX:            {unpackCheck, unpackBuiltin},
}

// Names of the builtins and the local the dict order rewrites use
// (fix_dictorder.go).
const (
	callBuiltin    = "__toolhost_call__"
	kwOrderBuiltin = "__toolhost_kw_order__"
	dictLocal      = "__toolhost_dict__"
)

// starCalls are the calls with star arguments, by the flags
// callOrdered passes: 1 for *args, 2 for **kwargs.
var starCalls = map[vm.OpCode]int{vm.CALL_FUNCTION: 0, vm.CALL_FUNCTION_VAR: 1, vm.CALL_FUNCTION_KW: 2, vm.CALL_FUNCTION_VAR_KW: 3}

// compareRewrites are the comparisons rewritten, by COMPARE_OP's argument
// (<, <=, ==, !=, >, >=, in, not in).
var compareRewrites = map[int]string{0: "__toolhost_lt__", 1: "__toolhost_le__", 2: "__toolhost_eq__", 3: "__toolhost_ne__",
	4: "__toolhost_gt__", 5: "__toolhost_ge__", 6: "__toolhost_in__", 7: "__toolhost_not_in__"}

// Names of the builtins of a generator's handler (PEP 479): the
// StopIteration class, and the RuntimeError a generator raises instead
// (gpython's generator ended quietly, as if it had returned).
const (
	stopIterationBuiltin = "__toolhost_stop_iteration__"
	genStopBuiltin       = "__toolhost_gen_stop__"
	// genReturnBuiltin goes before a generator's RETURN_VALUE: it refuses
	// a value other than None, which gpython's generators drop
	// (StopIteration.value, the value of yield from).
	genReturnBuiltin = "__toolhost_gen_return__"
	// yieldFromBuiltin follows YIELD_FROM: the value of yield from is
	// None (gpython's was the iterator).
	yieldFromBuiltin = "__toolhost_yield_from__"
)

// funcNameBuiltin follows MAKE_FUNCTION and MAKE_CLOSURE: the function
// made takes its name from its code's qualified name (qualifyNames).
const funcNameBuiltin = "__toolhost_func_name__"

// Names of the builtins of set displays and comprehensions (fix_sets.go).
const (
	buildSetBuiltin = "__toolhost_build_set__"
	constSetBuiltin = "__toolhost_const_set__"
	setAddBuiltin   = "__toolhost_set_add__"
)

// subscrBuiltin is a[i] where i may be a slice; delCheckBuiltin checks
// del a[i] before it is done; unpackBuiltin makes the value an unpacking
// takes apart, checking its length; attrBuiltin is o.name.
const (
	attrBuiltin     = "__toolhost_attr__"
	unpackBuiltin   = "__toolhost_unpack__"
	subscrBuiltin   = "__toolhost_subscr__"
	delCheckBuiltin = "__toolhost_del_check__"
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

// rewriteOps makes the operators of a code object calls of toolhost's
// (opRewrites, fix_operators.go and percentMod): gpython's operators are
// Go methods toolhost cannot replace. BINARY_ADD (one byte) becomes
// LOAD_GLOBAL __toolhost_add__, ROT_THREE, CALL_FUNCTION 2 (seven bytes);
// jumps and the line table are moved to match. A comparison whose right
// operand is a constant str, None or small int is left as it is (gpython
// gets those right). It reports false for code it cannot rewrite: code
// with EXTENDED_ARG (past 65,535 names or bytes), or whose rewrite would
// need it; fixCode refuses that code, which would run unfixed.
func rewriteOps(code *py.Code) bool { return rewriteOpsWith(code, false) }

// rewriteOpsWith is rewriteOps; allCompares rewrites the comparisons with
// a constant too.
func rewriteOpsWith(code *py.Code, allCompares bool) bool {
	var ins []instr
	b := code.Code
	for i := 0; i < len(b); {
		op := vm.OpCode(b[i])
		in := instr{at: i, op: op, size: 1}
		if op.HAS_ARG() {
			if i+2 >= len(b) {
				return false
			}
			in.arg, in.size = int(b[i+1])|int(b[i+2])<<8, 3
		}
		if op == vm.EXTENDED_ARG {
			return false
		}
		ins = append(ins, in)
		i += in.size
	}
	// plan says what each instruction becomes (ok false: left as it is).
	plan := make([]opRewrite, len(ins))
	planned := make([]bool, len(ins))
	count, deep := 0, false
	// A dict comprehension keeps its dict in a local of its own, for
	// MAP_ADD's rewrite; a function taking **kwargs starts by putting
	// them in the order of the call's keywords.
	comp := code.Name == "<dictcomp>" && len(ins) > 0 && ins[0].op == vm.BUILD_MAP
	setComp := code.Name == "<setcomp>" && len(ins) > 0 && ins[0].op == vm.BUILD_SET
	kwArg := -1
	if code.Flags&py.CO_VARKEYWORDS != 0 {
		kwArg = int(code.Argcount + code.Kwonlyargcount)
		if code.Flags&py.CO_VARARGS != 0 {
			kwArg++
		}
		if kwArg >= len(code.Varnames) {
			kwArg = -1
		}
	}
	// The instructions a FOR_ITER ends its loop at start with a check
	// that raises the error that ended it (fix_loops.go).
	at := make(map[int]int, len(ins))
	for k, in := range ins {
		at[in.at] = k
	}
	loopEnd := make([]bool, len(ins))
	for _, in := range ins {
		if in.op == vm.FOR_ITER {
			k, ok := at[in.at+in.size+in.arg]
			if !ok {
				return false
			}
			if !loopEnd[k] {
				loopEnd[k] = true
				count++
			}
		}
	}
	gen := code.Flags&py.CO_GENERATOR != 0
	for k, in := range ins {
		r, ok := opRewrites[in.op]
		forIter := k+1 < len(ins) && ins[k+1].op == vm.FOR_ITER
		switch in.op {
		case vm.COMPARE_OP:
			name, isCmp := compareRewrites[in.arg]
			ok = isCmp && (allCompares || !(k > 0 && ins[k-1].op == vm.LOAD_CONST && exactConst(code, ins[k-1].arg)))
			r = opRewrite{binaryCall, name}
		case vm.BINARY_SUBSCR:
			// Every subscript, by a constant too: gpython's IndexError and
			// TypeError do not name the container ("index out of range"),
			// and its KeyError of a constant int key wrote it as a str.
			ok, r = true, opRewrite{binaryCall, subscrBuiltin}
		case vm.MAP_ADD:
			if !comp {
				r = opRewrite{keyCheck, "__toolhost_key__"}
			}
		case vm.BUILD_MAP:
			ok, r = comp && k == 0, opRewrite{saveDict, ""}
		case vm.GET_ITER:
			if forIter {
				r = opRewrite{unaryCall, loopIterBuiltin}
			}
		case vm.LOAD_FAST:
			ok, r = forIter, opRewrite{suffixCall, loopWrapBuiltin}
		case vm.POP_JUMP_IF_FALSE, vm.POP_JUMP_IF_TRUE, vm.UNARY_NOT:
			// A comparison's result is a bool already.
			ok, r = !(k > 0 && ins[k-1].op == vm.COMPARE_OP), opRewrite{keyCheck, truthBuiltin}
		case vm.JUMP_IF_FALSE_OR_POP, vm.JUMP_IF_TRUE_OR_POP:
			ok, r = true, opRewrite{keyCheck, truthCheckBuiltin}
		case vm.BUILD_SET:
			ok, r = true, opRewrite{buildSet, buildSetBuiltin}
			if setComp && k == 0 {
				r.kind = buildSetSave
			} else if in.arg > 2 && constItems(ins[:k], in.arg) {
				r.name = constSetBuiltin
			}
		case vm.SET_ADD:
			ok, r = setComp, opRewrite{setAdd, setAddBuiltin}
		case vm.RETURN_VALUE:
			ok, r = gen, opRewrite{keyCheck, genReturnBuiltin}
		case vm.YIELD_FROM:
			ok, r = true, opRewrite{suffixCall, yieldFromBuiltin}
		case vm.MAKE_FUNCTION, vm.MAKE_CLOSURE:
			ok, r = true, opRewrite{suffixCall, funcNameBuiltin}
		case vm.CALL_FUNCTION, vm.CALL_FUNCTION_VAR, vm.CALL_FUNCTION_KW, vm.CALL_FUNCTION_VAR_KW:
			ok = in.op != vm.CALL_FUNCTION || in.arg>>8&0xff != 0
			r = opRewrite{callOrdered, callBuiltin}
		case vm.LOAD_ATTR:
			ok, r = in.arg < len(code.Names), opRewrite{loadAttr, attrBuiltin}
		case vm.LOAD_NAME, vm.LOAD_GLOBAL:
			if in.arg < len(code.Names) && strings.Contains(code.Names[in.arg], ".") {
				ok, r = true, opRewrite{dottedLoad, code.Names[in.arg]}
			}
		}
		if ok {
			plan[k], planned[k] = r, true
			count++
			deep = deep || r.kind == storeCheck
		}
	}
	// A generator's body runs in a try block whose handler turns a
	// StopIteration it raised into RuntimeError (PEP 479).
	if count == 0 && kwArg < 0 && !gen {
		return true
	}
	// newAt maps an old offset to its new one (offsets past the end too).
	shift := make([]int, len(b)+1)
	extra := 0
	if kwArg >= 0 {
		extra = 10 // the prologue: LOAD_GLOBAL, LOAD_FAST, CALL_FUNCTION 1, POP_TOP
	}
	if gen {
		extra += 3 // SETUP_EXCEPT to genStopHandler
	}
	for k, in := range ins {
		for j := in.at; j < in.at+in.size; j++ {
			shift[j] = extra
		}
		if loopEnd[k] {
			extra += loopEndSize
		}
		if planned[k] {
			extra += plan[k].extra(in.size)
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
	consts, varnames := code.Consts, code.Varnames
	constIndex := func(c py.Int) int {
		for i, o := range consts {
			if x, ok := o.(py.Int); ok && x == c {
				return i
			}
		}
		consts = append(consts, c)
		return len(consts) - 1
	}
	strConstIndex := func(c string) int {
		for i, o := range consts {
			if x, ok := o.(py.String); ok && string(x) == c {
				return i
			}
		}
		if len(consts) == 0 {
			// A function's first constant, if a str, is its __doc__.
			consts = append(consts, py.None)
		}
		consts = append(consts, py.String(c))
		return len(consts) - 1
	}
	local := -1
	if comp || setComp {
		varnames = append(append([]string(nil), varnames...), dictLocal)
		local = len(varnames) - 1
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
	if gen && !emit(vm.SETUP_EXCEPT, 0) {
		return false
	}
	if kwArg >= 0 && !(emit(vm.LOAD_GLOBAL, nameIndex(kwOrderBuiltin)) && emit(vm.LOAD_FAST, kwArg) &&
		emit(vm.CALL_FUNCTION, 1) && emit(vm.POP_TOP, 0)) {
		return false
	}
	for k, in := range ins {
		if loopEnd[k] && !(emit(vm.LOAD_GLOBAL, nameIndex(loopEndBuiltin)) && emit(vm.CALL_FUNCTION, 0) && emit(vm.POP_TOP, 0)) {
			return false
		}
		ok := true
		switch {
		case planned[k] && plan[k].kind == saveDict:
			ok = emit(in.op, in.arg) && emit(vm.DUP_TOP, 0) && emit(vm.STORE_FAST, local)
		case planned[k] && plan[k].kind == dottedLoad:
			ok = emitDotted(code, in.op, plan[k].name, nameIndex, emit, func(attr string) bool {
				return emit(vm.LOAD_GLOBAL, nameIndex(attrBuiltin)) && emit(vm.ROT_TWO, 0) && emit(vm.LOAD_CONST, strConstIndex(attr)) &&
					emit(vm.CALL_FUNCTION, 2)
			})
		case planned[k] && plan[k].kind == loadAttr:
			ok = emit(vm.LOAD_GLOBAL, nameIndex(plan[k].name)) && emit(vm.ROT_TWO, 0) && emit(vm.LOAD_CONST, strConstIndex(code.Names[in.arg])) &&
				emit(vm.CALL_FUNCTION, 2)
		case planned[k] && plan[k].kind == unpackCheck:
			n := in.arg
			if in.op == vm.UNPACK_EX {
				n |= 1 << 16
			}
			ok = emit(vm.LOAD_GLOBAL, nameIndex(plan[k].name)) && emit(vm.ROT_TWO, 0) && emit(vm.LOAD_CONST, constIndex(py.Int(n))) &&
				emit(vm.CALL_FUNCTION, 2) && emit(in.op, in.arg)
		case planned[k] && plan[k].kind == callOrdered:
			n := in.arg&0xff + 2*(in.arg>>8&0xff) + starCalls[in.op]&1 + starCalls[in.op]>>1
			ok = emit(vm.BUILD_TUPLE, n) && emit(vm.LOAD_CONST, constIndex(py.Int(in.arg|starCalls[in.op]<<16))) &&
				emit(vm.BUILD_TUPLE, 3) && emit(vm.LOAD_GLOBAL, nameIndex(plan[k].name)) && emit(vm.ROT_TWO, 0) && emit(vm.CALL_FUNCTION, 1)
		case planned[k]:
			f := nameIndex(plan[k].name)
			switch plan[k].kind {
			case binaryCall:
				ok = emit(vm.LOAD_GLOBAL, f) && emit(vm.ROT_THREE, 0) && emit(vm.CALL_FUNCTION, 2)
			case unaryCall:
				ok = emit(vm.LOAD_GLOBAL, f) && emit(vm.ROT_TWO, 0) && emit(vm.CALL_FUNCTION, 1)
			case keyCheck:
				arg := in.arg
				if absJumps[in.op] {
					if arg > len(b) {
						return false
					}
					arg = newAt(arg)
				}
				ok = emit(vm.LOAD_GLOBAL, f) && emit(vm.ROT_TWO, 0) && emit(vm.CALL_FUNCTION, 1) && emit(in.op, arg)
			case suffixCall:
				ok = emit(in.op, in.arg) && emit(vm.LOAD_GLOBAL, f) && emit(vm.ROT_TWO, 0) && emit(vm.CALL_FUNCTION, 1)
			case storeCheck:
				ok = emit(vm.DUP_TOP_TWO, 0) && emit(vm.LOAD_GLOBAL, f) && emit(vm.ROT_THREE, 0) &&
					emit(vm.CALL_FUNCTION, 2) && emit(vm.POP_TOP, 0) && emit(in.op, 0)
			case storeMap:
				ok = emit(vm.BUILD_TUPLE, 2) && emit(vm.LOAD_GLOBAL, f) && emit(vm.ROT_THREE, 0) && emit(vm.CALL_FUNCTION, 2)
			case buildSet, buildSetSave:
				ok = emit(vm.BUILD_TUPLE, in.arg) && emit(vm.LOAD_GLOBAL, f) && emit(vm.ROT_TWO, 0) && emit(vm.CALL_FUNCTION, 1)
				if plan[k].kind == buildSetSave {
					ok = ok && emit(vm.DUP_TOP, 0) && emit(vm.STORE_FAST, local)
				}
			case setAdd:
				ok = emit(vm.LOAD_GLOBAL, f) && emit(vm.ROT_TWO, 0) && emit(vm.LOAD_FAST, local) &&
					emit(vm.CALL_FUNCTION, 2) && emit(vm.POP_TOP, 0)
			case mapAdd:
				ok = emit(vm.BUILD_TUPLE, 2) && emit(vm.LOAD_GLOBAL, f) && emit(vm.ROT_TWO, 0) && emit(vm.LOAD_FAST, local) &&
					emit(vm.CALL_FUNCTION, 2) && emit(vm.POP_TOP, 0)
			}
		case relJumps[in.op]:
			target := in.at + in.size + in.arg
			if target > len(b) {
				return false
			}
			ok = emit(in.op, newAt(target)-(len(out)+in.size))
		case absJumps[in.op]:
			if in.arg > len(b) {
				return false
			}
			ok = emit(in.op, newAt(in.arg))
		default:
			ok = emit(in.op, in.arg)
		}
		if !ok {
			return false
		}
	}
	if gen {
		// The handler: DUP_TOP, LOAD_GLOBAL StopIteration, COMPARE_OP
		// exception-match, POP_JUMP_IF_FALSE reraise, POP_TOP x3,
		// LOAD_GLOBAL genStopBuiltin, CALL_FUNCTION 0, RAISE_VARARGS 1,
		// reraise: END_FINALLY.
		handler := len(out)
		if handler-3 > 0xffff {
			return false
		}
		out[1], out[2] = byte(handler-3), byte((handler-3)>>8)
		reraise := handler + 22
		if !(emit(vm.DUP_TOP, 0) && emit(vm.LOAD_GLOBAL, nameIndex(stopIterationBuiltin)) && emit(vm.COMPARE_OP, 10) &&
			emit(vm.POP_JUMP_IF_FALSE, reraise) && emit(vm.POP_TOP, 0) && emit(vm.POP_TOP, 0) && emit(vm.POP_TOP, 0) &&
			emit(vm.LOAD_GLOBAL, nameIndex(genStopBuiltin)) && emit(vm.CALL_FUNCTION, 0) && emit(vm.RAISE_VARARGS, 1) &&
			emit(vm.END_FINALLY, 0)) || len(out) != reraise+1 {
			return false
		}
		code.Stacksize += 4
	}
	// The line table: (address increment, line increment) pairs.
	var lnotab []byte
	addr, newPrev := 0, 0
	for i := 0; i+1 < len(code.Lnotab); i += 2 {
		addr += int(code.Lnotab[i])
		if addr > len(b) {
			return false
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
	code.Nlocals += int32(len(varnames) - len(code.Varnames))
	code.Consts, code.Varnames = consts, varnames
	code.Stacksize += 2
	if deep {
		code.Stacksize += 2
	}
	return true
}

// emitDotted emits the load of a dotted name (x.setter): its first part
// as the scope the compiler chose for the whole name would have it (a
// function's own local or cell, else a global; a class body's or module's
// name), then an attribute load (attr, as loadAttr's) for each other
// part.
func emitDotted(code *py.Code, op vm.OpCode, name string, nameIndex func(string) int, emit func(vm.OpCode, int) bool, attr func(string) bool) bool {
	parts := strings.Split(name, ".")
	first := func() bool {
		if op == vm.LOAD_GLOBAL {
			for i, v := range code.Varnames {
				if v == parts[0] {
					return emit(vm.LOAD_FAST, i)
				}
			}
			for i, v := range append(append([]string(nil), code.Cellvars...), code.Freevars...) {
				if v == parts[0] {
					return emit(vm.LOAD_DEREF, i)
				}
			}
		}
		return emit(op, nameIndex(parts[0]))
	}
	if !first() {
		return false
	}
	for _, p := range parts[1:] {
		if !attr(p) {
			return false
		}
	}
	return true
}

// foldedBinary are the binary operators CPython's compiler folds on
// constants.
var foldedBinary = map[vm.OpCode]bool{vm.BINARY_POWER: true, vm.BINARY_MULTIPLY: true, vm.BINARY_MODULO: true, vm.BINARY_ADD: true,
	vm.BINARY_SUBTRACT: true, vm.BINARY_SUBSCR: true, vm.BINARY_FLOOR_DIVIDE: true, vm.BINARY_TRUE_DIVIDE: true, vm.BINARY_LSHIFT: true,
	vm.BINARY_RSHIFT: true, vm.BINARY_AND: true, vm.BINARY_XOR: true, vm.BINARY_OR: true}

// constItems reports whether the last n values the instructions push are
// constant expressions (constants, and operators on them), which
// CPython's compiler folds: a set display of more than two of them is made
// from a frozenset constant.
func constItems(ins []instr, n int) bool {
	need := n
	for j := len(ins) - 1; j >= 0 && need > 0; j-- {
		switch op := ins[j].op; {
		case op == vm.LOAD_CONST:
			need--
		case op == vm.UNARY_NEGATIVE || op == vm.UNARY_POSITIVE || op == vm.UNARY_INVERT:
		case op == vm.BUILD_TUPLE:
			need += ins[j].arg - 1
		case foldedBinary[op]:
			need++
		default:
			return false
		}
	}
	return need == 0
}

// exactConst reports a constant that gpython compares as CPython does with
// anything: a str, None or an int within 2**53 (a float meets it
// exactly).
func exactConst(code *py.Code, i int) bool {
	if i >= len(code.Consts) {
		return false
	}
	switch c := code.Consts[i].(type) {
	case py.String, py.NoneType:
		return true
	case py.Int:
		return c <= 1<<53 && c >= -(1<<53)
	}
	return false
}
