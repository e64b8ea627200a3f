package awslocal

import (
	"context"
	"fmt"
)

// versionIDs names the template's Lambda versions and aliases as
// CloudFormation resolves them: a version's Ref is its function's ARN
// qualified by its number (1: the first published in a new function) and
// Fn::GetAtt Version the number; an alias's Ref is the ARN qualified by
// its name.
func versionIDs(t *Template, p *Physical) error {
	fnOf := func(id string) (string, error) {
		ref, _ := t.Resources[id].Properties["FunctionName"].(map[string]any)
		fn, _ := ref["Ref"].(string)
		if _, ok := p.Attrs[fn]["Arn"]; !ok {
			return "", fmt.Errorf("awslocal: %s: FunctionName is not a Ref to a function of the template", id)
		}
		return p.Attrs[fn]["Arn"], nil
	}
	for _, id := range t.ids("AWS::Lambda::Version") {
		arn, err := fnOf(id)
		if err != nil {
			return err
		}
		p.Refs[id] = arn + ":1"
		p.Attrs[id] = map[string]string{"Version": "1", "FunctionArn": arn}
	}
	for _, id := range t.ids("AWS::Lambda::Alias") {
		arn, err := fnOf(id)
		if err != nil {
			return err
		}
		name, _ := t.Resources[id].Properties["Name"].(string)
		p.Refs[id] = arn + ":" + name
		p.Attrs[id] = map[string]string{"Arn": p.Refs[id]}
	}
	return nil
}

// roleOf is the deployed function a template function's logical id is.
func (s *Stack) roleOf(logical string) (*Function, error) {
	for _, fn := range s.Functions {
		if fn.Logical == logical {
			return fn, nil
		}
	}
	return nil, fmt.Errorf("awslocal: no function %s was created", logical)
}

// publishVersion publishes the template's version of a function and
// starts the sandbox that serves it; the function's role is then served
// by that version (the $LATEST sandbox keeps serving unqualified calls).
func (s *Stack) publishVersion(ctx context.Context, id string) error {
	ref, _ := s.world.Template.Resources[id].Properties["FunctionName"].(map[string]any)
	logical, _ := ref["Ref"].(string)
	fn, err := s.roleOf(logical)
	if err != nil {
		return err
	}
	v, err := s.world.Lambda.PublishVersion(ctx, fn.Name)
	if err != nil {
		return err
	}
	if want := s.physical.Attrs[id]["Version"]; v != want {
		return fmt.Errorf("awslocal: %s published version %s, the template's Ref says %s", fn.Name, v, want)
	}
	return s.serveVersion(ctx, fn, v, fn.spec.Program)
}

// serveVersion starts the sandbox of fn's published version v running
// program, and makes it the role's function.
func (s *Stack) serveVersion(ctx context.Context, fn *Function, v, program string) error {
	spec := fn.spec
	spec.Version, spec.Program = v, program
	vf := &Function{Logical: fn.Logical, Name: fn.Name, ARN: fn.ARN + ":" + v, Role: fn.Role, Version: v, spec: spec}
	if err := s.world.Target.Started(ctx, vf, spec); err != nil {
		return err
	}
	s.Serving = append(s.Serving, fn)
	s.Functions[fn.Role] = vf
	return nil
}

func (s *Stack) createAlias(ctx context.Context, id string) error {
	p, err := s.props(id)
	if err != nil {
		return err
	}
	ref, _ := s.world.Template.Resources[id].Properties["FunctionName"].(map[string]any)
	logical, _ := ref["Ref"].(string)
	fn, err := s.roleOf(logical)
	if err != nil {
		return err
	}
	name, _ := p["Name"].(string)
	return s.world.Lambda.CreateAlias(ctx, fn.Name, name, fmt.Sprint(p["FunctionVersion"]))
}

// Redeploy deploys program over the stack as `cdk deploy` of a changed
// program does: every function's code is replaced (its $LATEST sandbox
// restarted on the new build), a function the template publishes gets a
// new version (its old ones keep serving: CloudFormation retains them)
// and its alias moves to it.
func (s *Stack) Redeploy(ctx context.Context, program string) error {
	published := map[string]string{} // role → alias
	for _, id := range s.world.Template.ids("AWS::Lambda::Alias") {
		ref, _ := s.world.Template.Resources[id].Properties["FunctionName"].(map[string]any)
		logical, _ := ref["Ref"].(string)
		fn, err := s.roleOf(logical)
		if err != nil {
			return err
		}
		name, _ := s.world.Template.Resources[id].Properties["Name"].(string)
		published[fn.Role] = name
	}
	for role, fn := range s.Functions {
		latest := fn
		if _, ok := published[role]; ok {
			latest = s.latestOf(fn)
		}
		s.world.Target.Stop(latest)
		latest.spec.Program = program
		if err := s.world.Target.Started(ctx, latest, latest.spec); err != nil {
			return err
		}
		alias, ok := published[role]
		if !ok {
			continue
		}
		// CloudFormation updates the code, then publishes.
		if err := s.world.Lambda.UpdateDescription(ctx, fn.Name, "Keel "+program); err != nil {
			return err
		}
		v, err := s.world.Lambda.PublishVersion(ctx, fn.Name)
		if err != nil {
			return err
		}
		s.Serving = append(s.Serving, fn)
		if err := s.serveVersion(ctx, latest, v, program); err != nil {
			return err
		}
		s.Serving = s.Serving[:len(s.Serving)-1] // latest is already serving
		if err := s.world.Lambda.UpdateAlias(ctx, fn.Name, alias, v); err != nil {
			return err
		}
	}
	s.Opts.Program = program
	return nil
}

// latestOf is the $LATEST sandbox of a published role.
func (s *Stack) latestOf(fn *Function) *Function {
	for _, f := range s.Serving {
		if f.Name == fn.Name && f.Version == "" {
			return f
		}
	}
	return fn
}
