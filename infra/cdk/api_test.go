package main

import (
	"strings"
	"testing"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/assertions"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslambda"
	"github.com/aws/jsii-runtime-go"
)

func TestAPI(t *testing.T) {
	cases := []struct {
		name     string
		props    APIProps
		authType string
	}{
		{name: "IAM by default", authType: "AWS_IAM"},
		{
			name:     "JWT when an issuer is given",
			props:    APIProps{JWTIssuer: "https://issuer.example.com/", JWTAudience: []string{"keel-api", "keel-cli"}},
			authType: "JWT",
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var stack awscdk.Stack
			var handler awslambda.Function
			s := synthConstruct(t, func(st awscdk.Stack, appDir string) {
				stack = st
				handler = awslambda.NewFunction(st, jsii.String("Handler"), &awslambda.FunctionProps{
					Runtime:      awslambda.Runtime_PROVIDED_AL2023(),
					Architecture: awslambda.Architecture_ARM_64(),
					Handler:      jsii.String("bootstrap"),
					Code:         awslambda.Code_FromAsset(jsii.String(appDir), nil),
				})
				p := tc.props
				p.Handler = handler
				NewAPI(st, "Api", p)
			})
			fnID := logicalID(stack, handler)

			s.Template.HasResourceProperties(jsii.String("AWS::ApiGatewayV2::Api"), map[string]any{"ProtocolType": "HTTP"})
			// $default behind the authorizer; the viewer's page and assets
			// (no data) open, and nothing else.
			s.Template.ResourceCountIs(jsii.String("AWS::ApiGatewayV2::Route"), jsii.Number(3))
			s.Template.HasResourceProperties(jsii.String("AWS::ApiGatewayV2::Route"), map[string]any{
				"RouteKey":          "$default",
				"AuthorizationType": tc.authType,
			})
			for _, key := range []string{"GET /", "GET /ui/{file}"} {
				s.Template.HasResourceProperties(jsii.String("AWS::ApiGatewayV2::Route"), map[string]any{
					"RouteKey":          key,
					"AuthorizationType": "NONE",
				})
			}
			s.Template.HasResourceProperties(jsii.String("AWS::ApiGatewayV2::Integration"), map[string]any{
				"IntegrationType":      "AWS_PROXY",
				"PayloadFormatVersion": "2.0",
				"IntegrationUri":       map[string]any{"Fn::GetAtt": []any{fnID, "Arn"}},
			})
			s.Template.HasResourceProperties(jsii.String("AWS::Lambda::Permission"), map[string]any{
				"Action":    "lambda:InvokeFunction",
				"Principal": "apigateway.amazonaws.com",
			})
			s.Template.HasResourceProperties(jsii.String("AWS::ApiGatewayV2::Stage"), map[string]any{
				"StageName":  "$default",
				"AutoDeploy": true,
				"AccessLogSettings": assertions.Match_ObjectLike(&map[string]any{
					"Format": assertions.Match_StringLikeRegexp(jsii.String(`\$context\.requestId`)),
				}),
			})
			if tc.authType != "JWT" {
				s.Template.ResourceCountIs(jsii.String("AWS::ApiGatewayV2::Authorizer"), jsii.Number(0))
				return
			}
			s.Template.HasResourceProperties(jsii.String("AWS::ApiGatewayV2::Authorizer"), map[string]any{
				"AuthorizerType": "JWT",
				"JwtConfiguration": map[string]any{
					"Issuer":   tc.props.JWTIssuer,
					"Audience": []any{"keel-api", "keel-cli"},
				},
			})
			for _, r := range s.resources("AWS::ApiGatewayV2::Route") {
				route := r.Props()
				if route["RouteKey"] == "$default" && !strings.Contains(jsonOf(route["AuthorizerId"]), "JwtAuthorizer") {
					t.Errorf("$default not bound to the JWT authorizer: %s", jsonOf(route))
				}
			}
		})
	}
}
