package starconf

import (
	"fmt"
	"strconv"
	"strings"

	"go.starlark.net/starlark"
	"go.starlark.net/syntax"
)

// MaxAlloc is the allocation budget of a pipeline's Starlark code: the
// bytes of every list, tuple and string built by `*`, `+`, `%`, `+=`,
// `*=`, `%=`, `.extend()`, the string methods of checkedMethods and the
// builtins of checkedBuiltins, estimated before each builds its result and
// summed over the whole evaluation (the step limit bounds
// everything else, but one of these operations can allocate gigabytes in
// a single step: `[0] * 1000000000`). Past it, evaluation fails at the
// operation, with its place. Options.MaxAlloc overrides it.
const MaxAlloc = 512 << 20

// maxRange bounds range(): a longer one could never be iterated within
// DefaultMaxSteps, and list(range(n)) would allocate it whole.
const maxRange = DefaultMaxSteps

// Names of the checked operations (predeclared; not valid identifiers in
// a user's file, so no pipeline can shadow or call them by name).
const (
	opMul    = "operator *"
	opAdd    = "operator +"
	opMod    = "operator %"
	opExtend = "operator extend"
	opMulEq  = "operator *="
	opAddEq  = "operator +="
	opModEq  = "operator %="
	// opMethod(x, "name", args…) checks x.name(args…) and calls it.
	opMethod = "operator .method"
)

// checkedMethods are the string methods whose result can be much larger
// than what they are called on (or given): opMethod estimates the result
// before calling them.
var checkedMethods = map[string]bool{
	"join": true, "format": true, "replace": true, "split": true, "rsplit": true,
	"splitlines": true, "elems": true, "codepoints": true, "elem_ords": true, "codepoint_ords": true,
}

// checkedBuiltins are the builtins that build a list, tuple, dict, set or
// string from any iterable or value: they are replaced by versions that
// charge the result first.
var checkedBuiltins = []string{"list", "tuple", "sorted", "reversed", "zip", "enumerate", "dict", "set", "str", "repr"}

// budget counts what the checked operations allocated.
type budget struct{ used, max int64 }

// valueBytes estimates the memory a value of n elements of x's kind takes.
func elemBytes(x starlark.Value) int64 {
	switch x.(type) {
	case starlark.String, starlark.Bytes:
		return 1
	}
	return 16 // an interface value per element
}

func length(x starlark.Value) (int64, bool) {
	switch x := x.(type) {
	case starlark.String:
		return int64(len(x)), true
	case starlark.Bytes:
		return int64(len(x)), true
	case *starlark.List:
		return int64(x.Len()), true
	case starlark.Tuple:
		return int64(len(x)), true
	}
	return 0, false
}

func (bg *budget) charge(n int64) error {
	if n < 0 || n > bg.max || bg.used+n > bg.max {
		what := "a value too large to count"
		if n >= 0 {
			what = fmt.Sprintf("a value of %d MiB", n>>20)
		}
		return fmt.Errorf("memory budget exceeded: building this value (%s) would take the Starlark code past %d MiB of lists, strings and dicts built", what, bg.max>>20)
	}
	bg.used += n
	return nil
}

// left is what remains of the budget.
func (bg *budget) left() int64 { return max(bg.max-bg.used, 0) }

// textLen estimates the length of str(v) (quoted strings inside
// containers), stopping once it passes limit: the walk is bounded by
// the budget, not by the value (a list holding one big list a thousand
// times prints it a thousand times).
func textLen(v starlark.Value, limit int64) int64 {
	var n int64
	var walk func(v starlark.Value, depth int)
	onPath := map[starlark.Value]bool{}
	walk = func(v starlark.Value, depth int) {
		if n > limit {
			return
		}
		if depth > 10000 {
			n = limit + 1 // deeper than any printer should go
			return
		}
		switch x := v.(type) {
		case starlark.String:
			n += int64(len(x)) + 2
			return
		case starlark.Bytes:
			n += int64(len(x))*4 + 3
			return
		case starlark.Int:
			n += int64(x.BigInt().BitLen()/3) + 2
			return
		case starlark.NoneType, starlark.Bool, starlark.Float:
			n += 24
			return
		}
		mutable := false
		switch v.(type) {
		case *starlark.List, *starlark.Dict, *starlark.Set:
			mutable = true
			if onPath[v] {
				n += 5 // [...]
				return
			}
			onPath[v] = true
			defer delete(onPath, v)
		}
		_ = mutable
		switch x := v.(type) {
		case *starlark.Dict:
			n += 2
			for _, kv := range x.Items() {
				walk(kv[0], depth+1)
				walk(kv[1], depth+1)
				n += 4
				if n > limit {
					return
				}
			}
			return
		case starlark.Iterable:
			if _, isSeq := v.(starlark.Sequence); !isSeq {
				if _, isSet := v.(*starlark.Set); !isSet {
					n += 64 // a view or an object: printed as its type
					return
				}
			}
			n += 2
			it := x.Iterate()
			defer it.Done()
			var e starlark.Value
			for it.Next(&e) {
				walk(e, depth+1)
				n += 2
				if n > limit {
					return
				}
			}
			return
		}
		n += int64(len(v.Type())) + 64
	}
	walk(v, 0)
	return n
}

// strLen is textLen of what formatting v with %s or {} gives.
func strLen(v starlark.Value, limit int64) int64 {
	if s, ok := v.(starlark.String); ok {
		return int64(len(s))
	}
	return textLen(v, limit)
}

// checkMod charges x % y when x is a format string: its length plus, for
// each directive, the largest argument (a directive's width counts too).
func (bg *budget) checkMod(x, y starlark.Value) error {
	f, ok := x.(starlark.String)
	if !ok {
		return nil
	}
	directives, widths := formatDirectives(string(f), '%')
	limit := bg.left()
	var biggest int64
	switch a := y.(type) {
	case starlark.Tuple:
		var sum int64
		for _, e := range a {
			sum += strLen(e, limit)
			if sum > limit {
				break
			}
		}
		return bg.charge(int64(len(f)) + sum + widths)
	case *starlark.Dict:
		for _, kv := range a.Items() {
			biggest = max(biggest, strLen(kv[1], limit))
		}
	default:
		biggest = strLen(y, limit)
	}
	return bg.charge(plus(mulCap(directives, biggest, limit), int64(len(f))+widths))
}

// formatDirectives counts the places of a format string where an
// argument goes (after % or at {), and sums the widths and precisions
// written in it (%999999999d builds a string that long).
func formatDirectives(f string, open byte) (n, widths int64) {
	for i := 0; i < len(f); i++ {
		if f[i] != open {
			continue
		}
		if i+1 < len(f) && f[i+1] == open {
			i++
			continue
		}
		n++
		num := int64(0)
		for j := i + 1; j < len(f) && j < i+64; j++ {
			c := f[j]
			if c >= '0' && c <= '9' {
				if num < 1<<40 {
					num = num*10 + int64(c-'0')
				}
				continue
			}
			widths += num
			num = 0
			if (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '}' {
				break
			}
		}
		widths += num
	}
	return n, widths
}

// plus is a + b, or -1 (too large to count) when a is.
func plus(a, b int64) int64 {
	if a < 0 {
		return -1
	}
	return a + b
}

// mulCap is a × b, or -1 when that is past limit (or overflows).
func mulCap(a, b, limit int64) int64 {
	if a == 0 || b == 0 {
		return 0
	}
	if a > (limit+1)/b+1 {
		return -1
	}
	return a * b
}

// seqLen is the length of an iterable, when it is known without iterating.
func seqLen(v starlark.Value) int64 {
	if s, ok := v.(starlark.Sequence); ok {
		return int64(s.Len())
	}
	if s, ok := v.(starlark.Indexable); ok {
		return int64(s.Len())
	}
	if d, ok := v.(*starlark.Dict); ok {
		return int64(d.Len())
	}
	return 0
}

// checkMethod charges x.name(args…) for the string methods that can build
// more than they are given.
func (bg *budget) checkMethod(x starlark.Value, name string, args starlark.Tuple, kwargs []starlark.Tuple) error {
	s, ok := x.(starlark.String)
	if !ok {
		return nil
	}
	limit := bg.left()
	switch name {
	case "join":
		if len(args) != 1 {
			return nil
		}
		n := seqLen(args[0])
		total := mulCap(n, int64(len(s)), limit)
		if total < 0 {
			return bg.charge(-1)
		}
		if it, ok := args[0].(starlark.Iterable); ok {
			iter := it.Iterate()
			defer iter.Done()
			var e starlark.Value
			for iter.Next(&e) {
				if es, ok := e.(starlark.String); ok {
					total += int64(len(es)) + int64(len(s))
				}
				if total > limit {
					break
				}
			}
		}
		return bg.charge(total)
	case "format":
		directives, widths := formatDirectives(string(s), '{')
		var biggest int64
		for _, a := range args {
			biggest = max(biggest, strLen(a, limit))
		}
		for _, kv := range kwargs {
			biggest = max(biggest, strLen(kv[1], limit))
		}
		return bg.charge(plus(mulCap(directives, biggest, limit), int64(len(s))+widths))
	case "replace":
		if len(args) < 2 {
			return nil
		}
		old, ok1 := args[0].(starlark.String)
		repl, ok2 := args[1].(starlark.String)
		if !ok1 || !ok2 {
			return nil
		}
		var count int64
		if len(old) == 0 {
			count = int64(len(s)) + 1
		} else {
			count = int64(strings.Count(string(s), string(old)))
		}
		if len(args) > 2 {
			if c, ok := args[2].(starlark.Int); ok {
				if k, ok := c.Int64(); ok && k >= 0 && k < count {
					count = k
				}
			}
		}
		grow := mulCap(count, int64(len(repl)), limit)
		if grow < 0 {
			return bg.charge(-1)
		}
		return bg.charge(plus(grow, int64(len(s))))
	case "split", "rsplit", "splitlines":
		// At most one element per byte, each a string value.
		return bg.charge((int64(len(s)) + 1) * 32)
	}
	// elems(), codepoints(), …: views; list() or sorted() of them charges.
	return nil
}

// checkBuiltin charges a call of one of checkedBuiltins.
func (bg *budget) checkBuiltin(name string, args starlark.Tuple, kwargs []starlark.Tuple) error {
	limit := bg.left()
	switch name {
	case "str", "repr":
		if len(args) == 1 {
			return bg.charge(strLen(args[0], limit))
		}
		return nil
	case "zip":
		if len(args) == 0 {
			return nil
		}
		n := int64(-1)
		for _, a := range args {
			if l := seqLen(a); n < 0 || l < n {
				n = l
			}
		}
		return bg.charge(mulCap(n, 16*int64(len(args))+40, limit))
	}
	var n int64
	for _, a := range args {
		n += seqLen(a)
	}
	for _, kv := range kwargs {
		_ = kv
		n++
	}
	per := int64(16)
	switch name {
	case "enumerate":
		per = 72
	case "dict", "set":
		per = 64
	}
	return bg.charge(mulCap(n, per, limit))
}

// result size of x * y (or y * x) when one is a sequence and the other an int.
func (bg *budget) checkMul(x, y starlark.Value) error {
	seq, num := x, y
	if _, ok := length(seq); !ok {
		seq, num = y, x
	}
	n, ok := length(seq)
	if !ok {
		return nil
	}
	k, ok := num.(starlark.Int)
	if !ok {
		return nil
	}
	times, ok := k.Int64()
	if !ok {
		return bg.charge(-1)
	}
	if times <= 0 || n == 0 {
		return nil
	}
	if times > bg.max/max(n*elemBytes(seq), 1) {
		return bg.charge(-1)
	}
	return bg.charge(n * times * elemBytes(seq))
}

func (bg *budget) checkAdd(x, y starlark.Value) error {
	n, ok1 := length(x)
	m, ok2 := length(y)
	if !ok1 || !ok2 {
		return nil
	}
	return bg.charge((n + m) * elemBytes(x))
}

// builtins are the checked operations the rewritten code calls, and a
// range() that refuses more than maxRange elements.
func (bg *budget) builtins() starlark.StringDict {
	binary := func(name string, op syntax.Token, check func(x, y starlark.Value) error) *starlark.Builtin {
		return starlark.NewBuiltin(name, func(_ *starlark.Thread, _ *starlark.Builtin, args starlark.Tuple, _ []starlark.Tuple) (starlark.Value, error) {
			if err := check(args[0], args[1]); err != nil {
				return nil, err
			}
			return starlark.Binary(op, args[0], args[1])
		})
	}
	universalRange := starlark.Universe["range"].(*starlark.Builtin)
	dict := starlark.StringDict{
		opMul: binary(opMul, syntax.STAR, bg.checkMul),
		opAdd: binary(opAdd, syntax.PLUS, bg.checkAdd),
		// operator extend(list, iterable) checks list.extend(iterable)
		// and returns the iterable for the real call.
		opExtend: starlark.NewBuiltin(opExtend, func(_ *starlark.Thread, _ *starlark.Builtin, args starlark.Tuple, _ []starlark.Tuple) (starlark.Value, error) {
			if _, isList := args[0].(*starlark.List); isList {
				if err := bg.checkAdd(args[0], args[1]); err != nil {
					return nil, err
				}
			}
			return args[1], nil
		}),
		// operator *=(x, y) and operator +=(x, y) check x op= y and
		// return y for the real, in-place operation.
		opMulEq: starlark.NewBuiltin(opMulEq, func(_ *starlark.Thread, _ *starlark.Builtin, args starlark.Tuple, _ []starlark.Tuple) (starlark.Value, error) {
			return args[1], bg.checkMul(args[0], args[1])
		}),
		opAddEq: starlark.NewBuiltin(opAddEq, func(_ *starlark.Thread, _ *starlark.Builtin, args starlark.Tuple, _ []starlark.Tuple) (starlark.Value, error) {
			return args[1], bg.checkAdd(args[0], args[1])
		}),
		"range": starlark.NewBuiltin("range", func(th *starlark.Thread, b *starlark.Builtin, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
			v, err := starlark.Call(th, universalRange, args, kwargs)
			if err != nil {
				return nil, err
			}
			if s, ok := v.(starlark.Sequence); ok && s.Len() > maxRange {
				return nil, fmt.Errorf("range of %d elements: at most %d (more could not be iterated within the step limit of %d steps)", s.Len(), maxRange, DefaultMaxSteps)
			}
			return v, nil
		}),
		opMod: binary(opMod, syntax.PERCENT, bg.checkMod),
		opModEq: starlark.NewBuiltin(opModEq, func(_ *starlark.Thread, _ *starlark.Builtin, args starlark.Tuple, _ []starlark.Tuple) (starlark.Value, error) {
			return args[1], bg.checkMod(args[0], args[1])
		}),
		opMethod: starlark.NewBuiltin(opMethod, func(th *starlark.Thread, _ *starlark.Builtin, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
			x, name := args[0], string(args[1].(starlark.String))
			rest := args[2:]
			if err := bg.checkMethod(x, name, rest, kwargs); err != nil {
				return nil, err
			}
			m, err := getAttr(x, name)
			if err != nil {
				return nil, err
			}
			if b, ok := m.(*starlark.Builtin); ok {
				// No frame of its own: errors read as the method's.
				return b.CallInternal(th, rest, kwargs)
			}
			return starlark.Call(th, m, rest, kwargs)
		}),
	}
	for _, name := range checkedBuiltins {
		orig := starlark.Universe[name].(*starlark.Builtin)
		dict[name] = starlark.NewBuiltin(name, func(th *starlark.Thread, b *starlark.Builtin, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
			if err := bg.checkBuiltin(name, args, kwargs); err != nil {
				return nil, err
			}
			return orig.CallInternal(th, args, kwargs)
		})
	}
	return dict
}

// getAttr is x.name, with the interpreter's error when x has no such
// attribute.
func getAttr(x starlark.Value, name string) (starlark.Value, error) {
	if ha, ok := x.(starlark.HasAttrs); ok {
		v, err := ha.Attr(name)
		if err != nil {
			return nil, err
		}
		if v != nil {
			return v, nil
		}
	}
	return nil, fmt.Errorf("%s has no .%s field or method", x.Type(), name)
}

// rewriteAlloc makes every `*`, `+`, `*=`, `+=` and `.extend()` of f go
// through the checked operations.
func rewriteAlloc(f *syntax.File) {
	for _, st := range f.Stmts {
		rwStmt(st)
	}
}

func call(name string, pos syntax.Position, args ...syntax.Expr) syntax.Expr {
	return &syntax.CallExpr{Fn: &syntax.Ident{NamePos: pos, Name: name}, Lparen: pos, Args: args, Rparen: pos}
}

// copyExpr copies an expression that can be evaluated twice with the
// same result (names, attributes, indexes, literals: no calls), so that
// a check can see the value an augmented assignment or extend() changes;
// ok is false for any other expression, which is then left unchecked.
func copyExpr(e syntax.Expr) (syntax.Expr, bool) {
	switch e := e.(type) {
	case *syntax.Ident:
		return &syntax.Ident{NamePos: e.NamePos, Name: e.Name}, true
	case *syntax.Literal:
		c := *e
		return &c, true
	case *syntax.ParenExpr:
		x, ok := copyExpr(e.X)
		return &syntax.ParenExpr{Lparen: e.Lparen, X: x, Rparen: e.Rparen}, ok
	case *syntax.DotExpr:
		x, ok := copyExpr(e.X)
		return &syntax.DotExpr{X: x, Dot: e.Dot, NamePos: e.NamePos, Name: &syntax.Ident{NamePos: e.Name.NamePos, Name: e.Name.Name}}, ok
	case *syntax.IndexExpr:
		x, ok1 := copyExpr(e.X)
		y, ok2 := copyExpr(e.Y)
		return &syntax.IndexExpr{X: x, Lbrack: e.Lbrack, Y: y, Rbrack: e.Rbrack}, ok1 && ok2
	}
	return nil, false
}

func rwStmts(ss []syntax.Stmt) {
	for _, s := range ss {
		rwStmt(s)
	}
}

func rwStmt(s syntax.Stmt) {
	switch s := s.(type) {
	case *syntax.AssignStmt:
		s.LHS = rwExpr(s.LHS)
		s.RHS = rwExpr(s.RHS)
		// x op= y keeps its in-place meaning; the check sees x's value
		// (evaluated again, so only when that has no side effects).
		if s.Op == syntax.STAR_EQ || s.Op == syntax.PLUS_EQ || s.Op == syntax.PERCENT_EQ {
			if x, ok := copyExpr(s.LHS); ok {
				name := opMulEq
				switch s.Op {
				case syntax.PLUS_EQ:
					name = opAddEq
				case syntax.PERCENT_EQ:
					name = opModEq
				}
				s.RHS = call(name, s.OpPos, x, s.RHS)
			}
		}
	case *syntax.ExprStmt:
		s.X = rwExpr(s.X)
	case *syntax.IfStmt:
		s.Cond = rwExpr(s.Cond)
		rwStmts(s.True)
		rwStmts(s.False)
	case *syntax.ForStmt:
		s.X = rwExpr(s.X)
		rwStmts(s.Body)
	case *syntax.WhileStmt:
		s.Cond = rwExpr(s.Cond)
		rwStmts(s.Body)
	case *syntax.DefStmt:
		for i, p := range s.Params {
			s.Params[i] = rwExpr(p)
		}
		rwStmts(s.Body)
	case *syntax.ReturnStmt:
		if s.Result != nil {
			s.Result = rwExpr(s.Result)
		}
	}
}

func rwExprs(es []syntax.Expr) {
	for i, e := range es {
		es[i] = rwExpr(e)
	}
}

func rwExpr(e syntax.Expr) syntax.Expr {
	switch e := e.(type) {
	case *syntax.BinaryExpr:
		e.X, e.Y = rwExpr(e.X), rwExpr(e.Y)
		switch e.Op {
		case syntax.STAR:
			return call(opMul, e.OpPos, e.X, e.Y)
		case syntax.PLUS:
			return call(opAdd, e.OpPos, e.X, e.Y)
		case syntax.PERCENT:
			return call(opMod, e.OpPos, e.X, e.Y)
		}
		// Keyword arguments (name=value) are BinaryExprs with Op EQ: the
		// name stays an identifier.
		return e
	case *syntax.UnaryExpr:
		if e.X != nil {
			e.X = rwExpr(e.X)
		}
	case *syntax.CallExpr:
		e.Fn = rwExpr(e.Fn)
		rwExprs(e.Args)
		if d, ok := e.Fn.(*syntax.DotExpr); ok && checkedMethods[d.Name.Name] {
			// x.join(…) → operator .method(x, "join", …): the arguments
			// stay as they were (keywords, *args), after two positionals.
			name := &syntax.Literal{Token: syntax.STRING, TokenPos: d.NamePos, Raw: strconv.Quote(d.Name.Name), Value: d.Name.Name}
			e.Fn = &syntax.Ident{NamePos: d.NamePos, Name: opMethod}
			e.Args = append([]syntax.Expr{d.X, name}, e.Args...)
			return e
		}
		if d, ok := e.Fn.(*syntax.DotExpr); ok && d.Name.Name == "extend" && len(e.Args) == 1 {
			if _, kw := e.Args[0].(*syntax.BinaryExpr); !kw {
				if _, star := e.Args[0].(*syntax.UnaryExpr); !star {
					if x, ok := copyExpr(d.X); ok {
						e.Args[0] = call(opExtend, e.Lparen, x, e.Args[0])
					}
				}
			}
		}
	case *syntax.ParenExpr:
		e.X = rwExpr(e.X)
	case *syntax.ListExpr:
		rwExprs(e.List)
	case *syntax.TupleExpr:
		rwExprs(e.List)
	case *syntax.DictExpr:
		for _, en := range e.List {
			if de, ok := en.(*syntax.DictEntry); ok {
				de.Key, de.Value = rwExpr(de.Key), rwExpr(de.Value)
			}
		}
	case *syntax.DotExpr:
		e.X = rwExpr(e.X)
	case *syntax.IndexExpr:
		e.X, e.Y = rwExpr(e.X), rwExpr(e.Y)
	case *syntax.SliceExpr:
		e.X = rwExpr(e.X)
		for _, p := range []*syntax.Expr{&e.Lo, &e.Hi, &e.Step} {
			if *p != nil {
				*p = rwExpr(*p)
			}
		}
	case *syntax.CondExpr:
		e.Cond, e.True, e.False = rwExpr(e.Cond), rwExpr(e.True), rwExpr(e.False)
	case *syntax.LambdaExpr:
		rwExprs(e.Params)
		e.Body = rwExpr(e.Body)
	case *syntax.Comprehension:
		e.Body = rwExpr(e.Body)
		for _, c := range e.Clauses {
			switch c := c.(type) {
			case *syntax.ForClause:
				c.X = rwExpr(c.X)
			case *syntax.IfClause:
				c.Cond = rwExpr(c.Cond)
			}
		}
	}
	return e
}

// Budget is the allocation budget of Starlark code other than a pipeline
// file (engine/starconf/script's request scripts): the same checked
// operations, builtins and limit.
type Budget struct{ b budget }

// NewBudget makes a budget of max bytes (MaxAlloc when 0).
func NewBudget(max int64) *Budget {
	if max <= 0 {
		max = MaxAlloc
	}
	return &Budget{b: budget{max: max}}
}

// Predeclared are the checked operations and builtins: add them to the
// program's predeclared names.
func (b *Budget) Predeclared() starlark.StringDict { return b.b.builtins() }

// Reset gives the next phase the whole budget again.
func (b *Budget) Reset() { b.b.used = 0 }

// RewriteAlloc makes f's allocating operations go through the checked ones
// of Predeclared.
func RewriteAlloc(f *syntax.File) { rewriteAlloc(f) }

// CheckSource refuses, before parsing, Starlark source larger than
// pipeline.MaxFileSize or nested deeper than pipeline.MaxNesting.
func CheckSource(name string, src []byte) error { return checkSource(name, src) }

// Charge takes n bytes from the budget, or fails with the budget's error.
func (b *Budget) Charge(n int64) error { return b.b.charge(n) }

// TextLen estimates the length of str(v), stopping past what is left of
// the budget.
func (b *Budget) TextLen(v starlark.Value) int64 { return textLen(v, b.b.left()) }
