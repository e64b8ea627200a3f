package main

import (
	"github.com/aws/aws-cdk-go/awscdk/v2/awsapigatewayv2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsapigatewayv2authorizers"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsapigatewayv2integrations"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslambda"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslogs"
	"github.com/aws/constructs-go/constructs/v10"
	"github.com/aws/jsii-runtime-go"
)

// APIProps configures NewAPI.
type APIProps struct {
	Handler awslambda.IFunction
	// JWTIssuer and JWTAudience, when set, replace IAM auth with a JWT
	// authorizer (an OIDC issuer URL and the accepted audiences).
	JWTIssuer   string
	JWTAudience []string
}

// API is the public entry: an HTTP API whose every route goes to the api
// function (payload format 2.0), which routes internally (internal/api).
type API struct {
	constructs.Construct
	HTTPAPI awsapigatewayv2.HttpApi
	// AccessLogs gets one JSON line per request, with the caller identity.
	AccessLogs awslogs.LogGroup
}

// accessLogFormat is one JSON line per request. The caller (IAM ARN or JWT
// subject) is logged so an operator can tell who created or approved what.
const accessLogFormat = `{"requestId":"$context.requestId","ip":"$context.identity.sourceIp",` +
	`"caller":"$context.identity.userArn","sub":"$context.authorizer.claims.sub",` +
	`"requestTime":"$context.requestTime","routeKey":"$context.routeKey","status":"$context.status",` +
	`"responseLength":"$context.responseLength","latency":"$context.responseLatency",` +
	`"integrationError":"$context.integrationErrorMessage"}`

// NewAPI creates the HTTP API with a $default route to the handler. Auth is
// IAM (callers sign with SigV4 and need execute-api:Invoke on it) unless a
// JWT issuer is given; only the web viewer's static page and assets
// (GET / and GET /ui/{file}) are open.
func NewAPI(scope constructs.Construct, id string, props APIProps) *API {
	c := constructs.NewConstruct(scope, jsii.String(id))

	var auth awsapigatewayv2.IHttpRouteAuthorizer = awsapigatewayv2authorizers.NewHttpIamAuthorizer()
	if props.JWTIssuer != "" {
		auth = awsapigatewayv2authorizers.NewHttpJwtAuthorizer(jsii.String("JwtAuthorizer"), jsii.String(props.JWTIssuer),
			&awsapigatewayv2authorizers.HttpJwtAuthorizerProps{JwtAudience: jsii.Strings(props.JWTAudience...)})
	}
	integration := awsapigatewayv2integrations.NewHttpLambdaIntegration(jsii.String("Lambda"), props.Handler,
		&awsapigatewayv2integrations.HttpLambdaIntegrationProps{
			PayloadFormatVersion: awsapigatewayv2.PayloadFormatVersion_VERSION_2_0(),
		})
	api := awsapigatewayv2.NewHttpApi(c, jsii.String("HttpApi"), &awsapigatewayv2.HttpApiProps{
		Description:        jsii.String("Keel HTTP API"),
		DefaultIntegration: integration,
		DefaultAuthorizer:  auth,
	})
	// The web run viewer's page and assets (internal/observe/viewer) hold no data,
	// and a browser loading a page can neither sign it nor attach a token:
	// GET / and GET /ui/{file} skip the authorizer. Every call the page
	// makes is a /v1 request through $default and its authorizer.
	for _, path := range []string{"/", "/ui/{file}"} {
		api.AddRoutes(&awsapigatewayv2.AddRoutesOptions{
			Path:        jsii.String(path),
			Methods:     &[]awsapigatewayv2.HttpMethod{awsapigatewayv2.HttpMethod_GET},
			Integration: integration,
			Authorizer:  awsapigatewayv2.NewHttpNoneAuthorizer(),
		})
	}

	// The L2 stage takes access-log settings only as a jsii interface; the
	// CloudFormation property is set on the generated stage directly. HTTP
	// APIs write access logs through their service-linked role.
	logs := awslogs.NewLogGroup(c, jsii.String("AccessLogs"), &awslogs.LogGroupProps{
		Retention: awslogs.RetentionDays_ONE_MONTH,
	})
	stage := api.DefaultStage().Node().DefaultChild().(awsapigatewayv2.CfnStage)
	stage.SetAccessLogSettings(&awsapigatewayv2.CfnStage_AccessLogSettingsProperty{
		DestinationArn: logs.LogGroupArn(),
		Format:         jsii.String(accessLogFormat),
	})

	return &API{Construct: c, HTTPAPI: api, AccessLogs: logs}
}
