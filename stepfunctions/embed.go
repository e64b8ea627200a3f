// Package stepfunctions carries run.asl.json, the one state machine of a
// Keel run, so `keel dev` executes the very file that CDK deploys.
package stepfunctions

import _ "embed"

// Definition is run.asl.json, with its ${Placeholders} unsubstituted.
//
//go:embed run.asl.json
var Definition []byte

// Placeholders lists the DefinitionSubstitutions run.asl.json expects.
func Placeholders() []string {
	return []string{"StepFunctionArn", "ApprovalFunctionArn", "FinalizeFunctionArn", "ClusterArn",
		"TaskDefinitionArn", "SubnetIds", "SecurityGroupIds", "AssignPublicIp", "ContainerName"}
}
