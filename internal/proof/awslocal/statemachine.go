package awslocal

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sfn"
	sfntypes "github.com/aws/aws-sdk-go-v2/service/sfn/types"
)

func (s *Stack) createStateMachine(ctx context.Context, id, name string) error {
	p, err := s.props(id)
	if err != nil {
		return err
	}
	def, err := s.world.Template.Definition(id)
	if err != nil {
		return err
	}
	subs := map[string]string{}
	if m, ok := p["DefinitionSubstitutions"].(map[string]any); ok {
		for k, v := range m {
			subs[k] = fmt.Sprint(v)
		}
	}
	if s.Opts.LoopBound > 0 {
		if def, err = lowerLoopBound(def, s.Opts.LoopBound); err != nil {
			return err
		}
	}
	if s.keel != nil {
		return s.keel.register(ctx, name, def, subs, s)
	}
	// CloudFormation replaces each ${Name} of DefinitionSubstitutions in
	// the definition string.
	text := string(def)
	for k, v := range subs {
		text = strings.ReplaceAll(text, "${"+k+"}", v)
	}
	roleArn, _ := p["RoleArn"].(string)
	_, err = s.SFN.CreateStateMachine(ctx, &sfn.CreateStateMachineInput{
		Name: aws.String(name), Definition: aws.String(text), RoleArn: aws.String(roleArn),
		Type: sfntypes.StateMachineType(fmt.Sprint(p["StateMachineType"])),
	})
	if err != nil {
		return fmt.Errorf("awslocal: create state machine: %w", err)
	}
	return nil
}

// lowerLoopBound sets the bound of the Route choice that compares $.loop.
func lowerLoopBound(def []byte, bound int) ([]byte, error) {
	var m map[string]any
	if err := json.Unmarshal(def, &m); err != nil {
		return nil, err
	}
	states, _ := m["States"].(map[string]any)
	route, _ := states["Route"].(map[string]any)
	choices, _ := route["Choices"].([]any)
	found := false
	for _, c := range choices {
		if ch, _ := c.(map[string]any); ch["Variable"] == "$.loop" {
			if _, ok := ch["NumericGreaterThanEquals"]; ok {
				ch["NumericGreaterThanEquals"], found = bound, true
			}
		}
	}
	if !found {
		return nil, fmt.Errorf("awslocal: the definition has no Route choice on $.loop to lower")
	}
	return json.Marshal(m)
}
