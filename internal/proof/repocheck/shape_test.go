package repocheck

import (
	"go/ast"
	"go/build"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"
)

// The harness's shape (issue 42): the step is a loop over four small
// values, and a feature is a function over the values it needs, not
// another method on *step. Before issue 42 *step had 103 methods and 29
// of the 157 arrows between the harness's files ran back; after it, 2
// and none. The bounds leave room for a feature that needs it, and say
// where the shape would start to slide.
const (
	maxStepMethods     = 25
	maxHarnessBackArcs = 20
	// maxValuesPerFile bounds how many of the four values (stepValues)
	// one file changes, so a reader sees what a feature may touch.
	maxValuesPerFile = 2
)

// TestHarnessShape measures internal/kernel/harness (its non-test files,
// as the default build selects them): the methods of *step, and the file
// reference graph — file A → file B when A uses a package-level name
// (function, type, variable, constant, method) that B declares — ordered
// by the Eades–Lin–Smyth feedback-arc-set heuristic. An arrow against
// that order is a back arrow: a file that calls back up into one that
// depends on it, which a reader cannot read top-down. It also checks that
// no file changes more than two of the step's four values, and that one
// file alone calls Store.Commit. Run with -v to see the figures, the
// order and what each file changes.
func TestHarnessShape(t *testing.T) {
	dir, err := filepath.Abs("../../kernel/harness")
	if err != nil {
		t.Fatal(err)
	}
	pkg, err := parseHarness(dir)
	if err != nil {
		t.Fatal(err)
	}
	methods := pkg.methodsOf("step")
	arcs := pkg.fileArcs()
	order := elsOrder(pkg.names(), arcs)
	back := backArcs(order, arcs)
	total := 0
	for _, to := range arcs {
		total += len(to)
	}
	t.Logf("*step methods: %d (limit %d)", methods, maxStepMethods)
	t.Logf("file arrows: %d, back arrows: %d (limit %d), files: %d", total, len(back), maxHarnessBackArcs, len(order))
	t.Logf("order: %s", strings.Join(order, " "))
	for _, a := range back {
		t.Logf("back arrow: %s", a)
	}
	if methods > maxStepMethods {
		t.Errorf("*step has %d methods, limit %d: make the feature a function over the values it needs", methods, maxStepMethods)
	}
	if len(back) > maxHarnessBackArcs {
		t.Errorf("%d back arrows between the harness's files, limit %d", len(back), maxHarnessBackArcs)
	}
	mutated := pkg.mutatedValues()
	for _, line := range describe(mutated) {
		t.Logf("changes %s", line)
	}
	for f, vs := range mutated {
		if len(vs) > maxValuesPerFile {
			t.Errorf("%s changes %d of the step's values (%s), limit %d: split it by what it changes", f, len(vs), strings.Join(vs, ", "), maxValuesPerFile)
		}
	}
	callers := pkg.commitCallers()
	t.Logf("Store.Commit called from: %s", strings.Join(callers, " "))
	if len(callers) > 1 {
		t.Errorf("Store.Commit is called from %s: one commit per iteration (rule 2) holds because one place writes, the pending commit", strings.Join(callers, ", "))
	}
}

// harnessPkg is what the shape test reads of a package: where each
// package-level name is declared, each method by receiver type, the
// field types of its structs, and its files.
type harnessPkg struct {
	files   map[string]*ast.File
	decls   map[string]string              // package-level name → file
	methods map[string]map[string]string   // receiver type → method → file
	fields  map[string]map[string]ast.Expr // struct type → field → its type
	results map[string][]ast.Expr          // function or "Type.method" → its result types
	imports map[string]map[string]bool     // file → import names
}

func parseHarness(dir string) (*harnessPkg, error) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	p := &harnessPkg{files: map[string]*ast.File{}, decls: map[string]string{}, methods: map[string]map[string]string{},
		fields: map[string]map[string]ast.Expr{}, results: map[string][]ast.Expr{}, imports: map[string]map[string]bool{}}
	fset := token.NewFileSet()
	for _, e := range ents {
		name := e.Name()
		if !strings.HasSuffix(name, ".go") || strings.HasSuffix(name, "_test.go") {
			continue
		}
		if ok, err := build.Default.MatchFile(dir, name); err != nil || !ok {
			continue
		}
		// Object resolution marks the identifiers a file declares itself
		// (locals, its own package-level names): what is left unresolved
		// is declared elsewhere.
		f, err := parser.ParseFile(fset, filepath.Join(dir, name), nil, 0)
		if err != nil {
			return nil, err
		}
		p.files[name] = f
		p.collect(name, f)
	}
	return p, nil
}

func (p *harnessPkg) collect(name string, f *ast.File) {
	p.imports[name] = map[string]bool{}
	for _, im := range f.Imports {
		path := strings.Trim(im.Path.Value, `"`)
		n := path[strings.LastIndex(path, "/")+1:]
		if im.Name != nil {
			n = im.Name.Name
		}
		p.imports[name][n] = true
	}
	for _, d := range f.Decls {
		switch d := d.(type) {
		case *ast.FuncDecl:
			key := d.Name.Name
			if d.Recv != nil {
				key = typeName(d.Recv.List[0].Type) + "." + key
			}
			if d.Type.Results != nil {
				for _, r := range d.Type.Results.List {
					for range max(len(r.Names), 1) {
						p.results[key] = append(p.results[key], r.Type)
					}
				}
			}
			if d.Recv == nil {
				p.decls[d.Name.Name] = name
				continue
			}
			recv := typeName(d.Recv.List[0].Type)
			if p.methods[recv] == nil {
				p.methods[recv] = map[string]string{}
			}
			p.methods[recv][d.Name.Name] = name
		case *ast.GenDecl:
			for _, s := range d.Specs {
				switch s := s.(type) {
				case *ast.TypeSpec:
					p.decls[s.Name.Name] = name
					if st, ok := s.Type.(*ast.StructType); ok {
						p.fields[s.Name.Name] = map[string]ast.Expr{}
						for _, fl := range st.Fields.List {
							for _, n := range fl.Names {
								p.fields[s.Name.Name][n.Name] = fl.Type
							}
						}
					}
				case *ast.ValueSpec:
					for _, n := range s.Names {
						if n.Name != "_" {
							p.decls[n.Name] = name
						}
					}
				}
			}
		}
	}
}

// typeName is the named type an expression of type e holds or points to
// ("" when it is not one of a package's named types).
func typeName(e ast.Expr) string {
	for {
		switch x := e.(type) {
		case *ast.StarExpr:
			e = x.X
		case *ast.ParenExpr:
			e = x.X
		case *ast.IndexExpr:
			e = x.X
		case *ast.Ident:
			return x.Name
		default:
			return ""
		}
	}
}

func (p *harnessPkg) names() []string {
	var out []string
	for n := range p.files {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

func (p *harnessPkg) methodsOf(recv string) int { return len(p.methods[recv]) }

// fileArcs is the reference graph: from file → set of files it uses.
func (p *harnessPkg) fileArcs() map[string]map[string]bool {
	arcs := map[string]map[string]bool{}
	for name, f := range p.files {
		r := refs{p: p, file: name, use: func(decl string) {
			if decl != "" && decl != name {
				if arcs[name] == nil {
					arcs[name] = map[string]bool{}
				}
				arcs[name][decl] = true
			}
		}}
		ast.Inspect(f, r.visit)
	}
	return arcs
}

// refs walks one file for what it uses.
type refs struct {
	p    *harnessPkg
	file string
	use  func(declFile string)
}

func (r refs) walk(n ast.Node) {
	if n != nil {
		ast.Inspect(n, r.visit)
	}
}

func (r refs) visit(n ast.Node) bool {
	switch x := n.(type) {
	case *ast.FuncDecl:
		// A method's name is no use of a package-level name.
		if x.Recv != nil {
			r.walk(x.Recv)
		}
		r.walk(x.Type)
		if x.Body != nil {
			r.walk(x.Body)
		}
		return false
	case *ast.CompositeLit:
		// A key of a struct literal names a field, not a package-level name.
		if x.Type != nil {
			r.walk(x.Type)
		}
		for _, el := range x.Elts {
			kv, ok := el.(*ast.KeyValueExpr)
			if !ok {
				r.walk(el)
				continue
			}
			if _, key := kv.Key.(*ast.Ident); !key {
				r.walk(kv.Key)
			}
			r.walk(kv.Value)
		}
		return false
	case *ast.SelectorExpr:
		if id, ok := x.X.(*ast.Ident); ok && id.Obj == nil && r.p.imports[r.file][id.Name] {
			return false // a qualified identifier of another package
		}
		r.use(r.p.methodFile(x))
		r.walk(x.X)
		return false
	case *ast.Ident:
		if x.Obj == nil {
			r.use(r.p.decls[x.Name])
		}
	}
	return true
}

// methodFile is the file declaring the method sel selects: by the type of
// its operand when the source tells it, else by the name when one type of
// the package alone has a method of that name.
func (p *harnessPkg) methodFile(sel *ast.SelectorExpr) string {
	if t := p.exprType(sel.X, 0); t != nil {
		name, ours := p.named(t)
		if !ours {
			return "" // a field or method of another package's type, or of no named type
		}
		return p.methods[name][sel.Sel.Name]
	}
	file := ""
	for _, ms := range p.methods {
		if f, ok := ms[sel.Sel.Name]; ok {
			if file != "" && file != f {
				return ""
			}
			file = f
		}
	}
	return file
}

// named is the package's named type t holds or points to; ours is false
// when t is another package's type, a builtin or no named type at all.
func (p *harnessPkg) named(t ast.Expr) (name string, ours bool) {
	for {
		switch x := t.(type) {
		case *ast.StarExpr:
			t = x.X
		case *ast.ParenExpr:
			t = x.X
		case *ast.Ident:
			_, ok := p.decls[x.Name]
			return x.Name, ok
		default:
			return "", false
		}
	}
}

// exprType is the type expression of e as far as the syntax tells (nil
// when it does not): a variable or parameter declared with a type, a
// composite literal, a field of a struct of the package, an element of a
// map or slice of known type.
func (p *harnessPkg) exprType(e ast.Expr, depth int) ast.Expr {
	if depth > 8 {
		return nil
	}
	switch x := e.(type) {
	case *ast.ParenExpr:
		return p.exprType(x.X, depth+1)
	case *ast.StarExpr:
		return p.exprType(x.X, depth+1)
	case *ast.UnaryExpr:
		return p.exprType(x.X, depth+1)
	case *ast.CompositeLit:
		return x.Type
	case *ast.CallExpr:
		if rs := p.callResults(x, depth); len(rs) > 0 {
			return rs[0]
		}
	case *ast.IndexExpr:
		switch t := p.exprType(x.X, depth+1).(type) {
		case *ast.MapType:
			return t.Value
		case *ast.ArrayType:
			return t.Elt
		}
	case *ast.SelectorExpr:
		if t := p.exprType(x.X, depth+1); t != nil {
			if name, ours := p.named(t); ours {
				return p.fields[name][x.Sel.Name]
			}
		}
	case *ast.Ident:
		if x.Obj == nil {
			return nil
		}
		switch d := x.Obj.Decl.(type) {
		case *ast.Field:
			return d.Type
		case *ast.ValueSpec:
			return d.Type
		case *ast.AssignStmt:
			for i, l := range d.Lhs {
				if id, ok := l.(*ast.Ident); !ok || id.Obj != x.Obj {
					continue
				}
				if len(d.Rhs) == len(d.Lhs) {
					return p.exprType(d.Rhs[i], depth+1)
				}
				if call, ok := d.Rhs[0].(*ast.CallExpr); ok && len(d.Rhs) == 1 {
					if rs := p.callResults(call, depth); i < len(rs) {
						return rs[i]
					}
				}
			}
		}
	}
	return nil
}

// callResults are the result types of a call of one of the package's
// functions, or of a method of one of its types.
func (p *harnessPkg) callResults(call *ast.CallExpr, depth int) []ast.Expr {
	switch f := call.Fun.(type) {
	case *ast.Ident:
		if _, ok := p.decls[f.Name]; ok && (f.Obj == nil || f.Obj.Kind == ast.Fun) {
			return p.results[f.Name]
		}
	case *ast.SelectorExpr:
		if t := p.exprType(f.X, depth+1); t != nil {
			if name, ours := p.named(t); ours {
				return p.results[name+"."+f.Sel.Name]
			}
		}
	}
	return nil
}

// elsOrder is the Eades–Lin–Smyth greedy order of the files for a small
// feedback arc set: sinks go to the end, sources to the front, and when
// neither is left the file with most arrows out over arrows in goes
// next. Ties go to the first name, so the order is the same every run.
func elsOrder(nodes []string, arcs map[string]map[string]bool) []string {
	left := map[string]bool{}
	for _, n := range nodes {
		left[n] = true
	}
	deg := func(n string) (in, out int) {
		for to := range arcs[n] {
			if left[to] {
				out++
			}
		}
		for from, to := range arcs {
			if left[from] && to[n] {
				in++
			}
		}
		return in, out
	}
	var head, tail []string
	for len(left) > 0 {
		pick, moved := "", false
		for _, n := range nodes {
			if _, out := deg(n); left[n] && out == 0 {
				tail = append([]string{n}, tail...)
				delete(left, n)
				moved = true
				break
			}
		}
		if moved {
			continue
		}
		for _, n := range nodes {
			if in, _ := deg(n); left[n] && in == 0 {
				head = append(head, n)
				delete(left, n)
				moved = true
				break
			}
		}
		if moved {
			continue
		}
		best := 0
		for _, n := range nodes {
			if !left[n] {
				continue
			}
			in, out := deg(n)
			if pick == "" || out-in > best {
				pick, best = n, out-in
			}
		}
		head = append(head, pick)
		delete(left, pick)
	}
	return append(head, tail...)
}

// backArcs lists the arrows that run against order, as "from → to".
func backArcs(order []string, arcs map[string]map[string]bool) []string {
	at := map[string]int{}
	for i, n := range order {
		at[n] = i
	}
	var out []string
	for from, to := range arcs {
		for t := range to {
			if at[t] < at[from] {
				out = append(out, from+" → "+t)
			}
		}
	}
	slices.Sort(out)
	return out
}
