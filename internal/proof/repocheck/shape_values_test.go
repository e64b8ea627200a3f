package repocheck

import (
	"go/ast"
	"go/token"
	"sort"
	"strings"
)

// stepValues are the four values a Step's features work on (harness/doc
// of issue 42): the transcript, the plan, the cursor and the pending
// commit.
var stepValues = []string{"transcript", "plan", "cursor", "pending"}

// mutatedValues maps each file to the step values its code changes: it
// writes one of their fields, or calls one of their methods that does
// (directly or through another method of the package on its receiver).
// A value a function builds in a local variable of its own is not
// counted: that is construction, not a change to the Step's state.
func (p *harnessPkg) mutatedValues() map[string][]string {
	mut := p.mutatingMethods()
	isValue := map[string]bool{}
	for _, v := range stepValues {
		isValue[v] = true
	}
	out := map[string][]string{}
	for name, f := range p.files {
		seen := map[string]bool{}
		for _, d := range f.Decls {
			fn, ok := d.(*ast.FuncDecl)
			if !ok || fn.Body == nil {
				continue
			}
			for t := range p.changes(fn, mut) {
				if isValue[t] {
					seen[t] = true
				}
			}
		}
		for t := range seen {
			out[name] = append(out[name], t)
		}
		sort.Strings(out[name])
	}
	return out
}

// mutatingMethods is, for each type of the package, the methods that
// change their receiver: found to a fixpoint, since a method may change
// it through another.
func (p *harnessPkg) mutatingMethods() map[string]map[string]bool {
	mut := map[string]map[string]bool{}
	for changed := true; changed; {
		changed = false
		for _, f := range p.files {
			for _, d := range f.Decls {
				fn, ok := d.(*ast.FuncDecl)
				if !ok || fn.Body == nil || fn.Recv == nil || len(fn.Recv.List[0].Names) == 0 {
					continue
				}
				if _, ptr := fn.Recv.List[0].Type.(*ast.StarExpr); !ptr {
					continue
				}
				recv := typeName(fn.Recv.List[0].Type)
				if mut[recv][fn.Name.Name] {
					continue
				}
				if p.changes(fn, mut)[recv] {
					if mut[recv] == nil {
						mut[recv] = map[string]bool{}
					}
					mut[recv][fn.Name.Name] = true
					changed = true
				}
			}
		}
	}
	return mut
}

// changes is the set of the package's types whose values fn changes
// through its receiver, its parameters or their fields.
func (p *harnessPkg) changes(fn *ast.FuncDecl, mut map[string]map[string]bool) map[string]bool {
	out := map[string]bool{}
	write := func(e ast.Expr) bool {
		types, local := p.written(e)
		for _, t := range types {
			out[t] = true
		}
		return !local
	}
	ast.Inspect(fn.Body, func(n ast.Node) bool {
		switch x := n.(type) {
		case *ast.AssignStmt:
			if x.Tok != token.DEFINE {
				for _, l := range x.Lhs {
					write(l)
				}
			}
		case *ast.IncDecStmt:
			write(x.X)
		case *ast.CallExpr:
			switch f := x.Fun.(type) {
			case *ast.Ident:
				if (f.Name == "delete" || f.Name == "clear") && f.Obj == nil && len(x.Args) > 0 {
					write(x.Args[0])
				}
			case *ast.SelectorExpr:
				if t := p.exprType(f.X, 0); t != nil {
					if name, ours := p.named(t); ours && mut[name][f.Sel.Name] && write(f.X) {
						out[name] = true
					}
				}
			}
		}
		return true
	})
	return out
}

// written is the package's types whose fields a write to e changes: each
// value along the selector chain e is reached through. local: the chain
// starts at a value the function built itself in a local variable, which
// is construction, not a change to the Step's state.
func (p *harnessPkg) written(e ast.Expr) (types []string, local bool) {
	for {
		switch x := e.(type) {
		case *ast.ParenExpr:
			e = x.X
			continue
		case *ast.StarExpr:
			e = x.X
			continue
		case *ast.IndexExpr:
			e = x.X
			continue
		case *ast.SelectorExpr:
			if t := p.exprType(x.X, 0); t != nil {
				if name, ours := p.named(t); ours {
					types = append(types, name)
				}
			}
			e = x.X
			continue
		case *ast.Ident:
			if x.Obj != nil && p.localValue(x) {
				return nil, true
			}
		}
		return types, false
	}
}

// localValue: id is a variable declared in a function body (not a
// parameter or receiver) that holds a value, not a pointer.
func (p *harnessPkg) localValue(id *ast.Ident) bool {
	notPtr := func(t ast.Expr) bool {
		_, ptr := t.(*ast.StarExpr)
		return t != nil && !ptr
	}
	switch d := id.Obj.Decl.(type) {
	case *ast.ValueSpec:
		return notPtr(d.Type)
	case *ast.AssignStmt:
		for i, l := range d.Lhs {
			if l, ok := l.(*ast.Ident); !ok || l.Obj != id.Obj {
				continue
			}
			if len(d.Rhs) == len(d.Lhs) {
				u, addr := d.Rhs[i].(*ast.UnaryExpr)
				return !addr || u.Op != token.AND
			}
			if call, ok := d.Rhs[0].(*ast.CallExpr); ok {
				if rs := p.callResults(call, 0); i < len(rs) {
					return notPtr(rs[i])
				}
			}
		}
	}
	return false
}

// commitCallers lists the files that call a Commit or CommitSignals
// method: the store's, in the harness.
func (p *harnessPkg) commitCallers() []string {
	var out []string
	for name, f := range p.files {
		calls := false
		ast.Inspect(f, func(n ast.Node) bool {
			if c, ok := n.(*ast.CallExpr); ok {
				if s, ok := c.Fun.(*ast.SelectorExpr); ok && (s.Sel.Name == "Commit" || s.Sel.Name == "CommitSignals") {
					calls = true
				}
			}
			return !calls
		})
		if calls {
			out = append(out, name)
		}
	}
	sort.Strings(out)
	return out
}

// describe is "file: a, b" for each file with values, sorted.
func describe(m map[string][]string) []string {
	var out []string
	for f, vs := range m {
		out = append(out, f+": "+strings.Join(vs, ", "))
	}
	sort.Strings(out)
	return out
}
