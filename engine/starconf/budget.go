package starconf

import (
	"fmt"

	"go.starlark.net/starlark"
	"go.starlark.net/syntax"
)

// MaxAlloc is the allocation budget of a pipeline's Starlark code: the
// bytes of every list, tuple and string built by `*`, `+`, `+=`, `*=` and
// `.extend()`, summed over the whole evaluation (the step limit bounds
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
	opExtend = "operator extend"
	opMulEq  = "operator *="
	opAddEq  = "operator +="
)

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
		return fmt.Errorf("memory budget exceeded: building this value (%s) would take the pipeline's Starlark code past %d MiB of lists and strings built by *, + and extend()", what, bg.max>>20)
	}
	bg.used += n
	return nil
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
	return starlark.StringDict{
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
	}
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
		if s.Op == syntax.STAR_EQ || s.Op == syntax.PLUS_EQ {
			if x, ok := copyExpr(s.LHS); ok {
				name := opMulEq
				if s.Op == syntax.PLUS_EQ {
					name = opAddEq
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
