package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// The CDK context keys the app reads (cdk.json "context", or
// `cdk synth -c keel:natGateways=2`). Values given with -c are strings;
// cdk.json may also use JSON numbers, booleans, arrays and objects.
//
// keel:app is the Go program the stack deploys: a main package directory
// that calls keel.Main, relative to keel:assetRoot (the repository root)
// unless absolute, e.g. `make synth APP=./examples/triage`. It may belong to
// another module than Keel's (its own go.mod, typically with
// `replace github.com/keelrun/keel => ../..`): the build runs in the nearest
// directory at or above it that holds a go.mod. The app synthesizes ONE
// linux/arm64 binary from it (BuildApp), which every Lambda function and
// the Fargate task run, each told its role by KEEL_ROLE.
const (
	CtxStackName          = "keel:stackName"          // default "Keel"
	CtxAssetRoot          = "keel:assetRoot"          // default "../.." (the repository root, from infra/cdk)
	CtxApp                = "keel:app"                // main package, relative to keel:assetRoot; default "./cmd/keel"
	CtxBuildTags          = "keel:buildTags"          // go build tags added to BaseBuildTags, comma-separated
	CtxTaskImage          = "keel:taskImage"          // image URI; default: the keel:app binary in a distroless image
	CtxTaskCPU            = "keel:taskCpu"            // default 1024
	CtxTaskMemoryMiB      = "keel:taskMemoryMiB"      // default 2048
	CtxNATGateways        = "keel:natGateways"        // default 0: public subnets, nothing billed by the hour
	CtxCommandRunner      = "keel:commandRunner"      // default false: agents' commands do not run on AWS
	CtxS3PrefixList       = "keel:s3PrefixList"       // pl-...: the command runner's egress narrowed to S3
	CtxAvailabilityZones  = "keel:availabilityZones"  // two zones, comma-separated; default Fn::GetAZs
	CtxJWTIssuer          = "keel:jwtIssuer"          // OIDC issuer URL; default: IAM auth
	CtxJWTAudience        = "keel:jwtAudience"        // comma-separated
	CtxModelSecretName    = "keel:modelSecretName"    // Secrets Manager secret name
	CtxAppSecretNames     = "keel:appSecretNames"     // comma-separated secret names the program reads itself
	CtxEnvironment        = "keel:environment"        // object, or "K=V,K=V"
	CtxScheduleExpression = "keel:scheduleExpression" // default "rate(1 day)"
	CtxScheduleEnabled    = "keel:scheduleEnabled"    // default false
	CtxScheduleAgent      = "keel:scheduleAgent"
	CtxScheduleInput      = "keel:scheduleInput"
)

const defaultStackName = "Keel"

// Config is what the app synthesizes: the stack's name and its props.
type Config struct {
	StackName string
	Props     KeelStackProps
}

// contextGetter returns a context value, nil when absent (app.Node().TryGetContext).
type contextGetter func(key string) any

// configFromContext reads the keel:* context. Relative paths are relative
// to dir (the working directory cdk runs the app in: infra/cdk).
func configFromContext(get contextGetter, dir string) (Config, error) {
	c := &contextReader{get: get}
	cfg := Config{StackName: c.str(CtxStackName)}
	if cfg.StackName == "" {
		cfg.StackName = defaultStackName
	}
	root := c.str(CtxAssetRoot)
	if root == "" {
		root = filepath.Join("..", "..")
	}
	if !filepath.IsAbs(root) {
		root = filepath.Join(dir, root)
	}
	cfg.Props = KeelStackProps{
		AssetRoot:         filepath.Clean(root),
		App:               c.str(CtxApp),
		BuildTags:         c.list(CtxBuildTags),
		TaskImage:         c.str(CtxTaskImage),
		TaskCPU:           c.num(CtxTaskCPU),
		TaskMemoryMiB:     c.num(CtxTaskMemoryMiB),
		NATGateways:       c.num(CtxNATGateways),
		CommandRunner:     c.boolean(CtxCommandRunner),
		S3PrefixListID:    c.str(CtxS3PrefixList),
		AvailabilityZones: c.list(CtxAvailabilityZones),
		JWTIssuer:         c.str(CtxJWTIssuer),
		JWTAudience:       c.list(CtxJWTAudience),
		ModelSecretName:   c.str(CtxModelSecretName),
		AppSecretNames:    c.list(CtxAppSecretNames),
		Environment:       c.env(CtxEnvironment),
		Schedule: ExampleSchedule{
			Expression: c.str(CtxScheduleExpression),
			Enabled:    c.boolean(CtxScheduleEnabled),
			Agent:      c.str(CtxScheduleAgent),
			Input:      c.str(CtxScheduleInput),
		},
	}
	return cfg, errors.Join(c.errs...)
}

// contextReader reads typed values of CDK context keys. Context comes from
// cdk.json (JSON values) or -c on the command line (strings), so each type
// takes both; a value of neither form is recorded in errs and reads as
// the zero value, so that one run reports every bad key.
type contextReader struct {
	get  contextGetter
	errs []error
}

func (c *contextReader) str(key string) string {
	switch v := c.get(key).(type) {
	case nil:
		return ""
	case string:
		return strings.TrimSpace(v)
	default:
		c.errs = append(c.errs, fmt.Errorf("%s: want a string, got %T", key, v))
		return ""
	}
}

func (c *contextReader) num(key string) int {
	switch v := c.get(key).(type) {
	case nil:
		return 0
	case float64:
		if v != float64(int(v)) {
			c.errs = append(c.errs, fmt.Errorf("%s: want an integer, got %v", key, v))
		}
		return int(v)
	case string:
		n, err := strconv.Atoi(strings.TrimSpace(v))
		if err != nil {
			c.errs = append(c.errs, fmt.Errorf("%s: %w", key, err))
		}
		return n
	default:
		c.errs = append(c.errs, fmt.Errorf("%s: want an integer, got %T", key, v))
		return 0
	}
}

func (c *contextReader) boolean(key string) bool {
	switch v := c.get(key).(type) {
	case nil:
		return false
	case bool:
		return v
	case string:
		b, err := strconv.ParseBool(strings.TrimSpace(v))
		if err != nil {
			c.errs = append(c.errs, fmt.Errorf("%s: %w", key, err))
		}
		return b
	default:
		c.errs = append(c.errs, fmt.Errorf("%s: want a boolean, got %T", key, v))
		return false
	}
}

// list takes a JSON array of strings or a comma-separated string.
func (c *contextReader) list(key string) []string {
	switch v := c.get(key).(type) {
	case nil:
		return nil
	case string:
		return splitList(v)
	case []any:
		var out []string
		for _, e := range v {
			s, ok := e.(string)
			if !ok {
				c.errs = append(c.errs, fmt.Errorf("%s: want strings, got %T", key, e))
				continue
			}
			out = append(out, s)
		}
		return out
	default:
		c.errs = append(c.errs, fmt.Errorf("%s: want a list, got %T", key, v))
		return nil
	}
}

// env takes a JSON object of strings, or a string: a JSON object, or
// comma-separated NAME=VALUE pairs.
func (c *contextReader) env(key string) map[string]string {
	switch v := c.get(key).(type) {
	case nil:
		return nil
	case map[string]any:
		out := make(map[string]string, len(v))
		for k, e := range v {
			s, ok := e.(string)
			if !ok {
				c.errs = append(c.errs, fmt.Errorf("%s: %s: want a string, got %T", key, k, e))
				continue
			}
			out[k] = s
		}
		return out
	case string:
		return c.envString(key, v)
	default:
		c.errs = append(c.errs, fmt.Errorf("%s: want an object, got %T", key, v))
		return nil
	}
}

// envString is env of a string value.
func (c *contextReader) envString(key, v string) map[string]string {
	if strings.HasPrefix(strings.TrimSpace(v), "{") {
		var out map[string]string
		if err := json.Unmarshal([]byte(v), &out); err != nil {
			c.errs = append(c.errs, fmt.Errorf("%s: %w", key, err))
		}
		return out
	}
	out := map[string]string{}
	for _, kv := range splitList(v) {
		k, val, ok := strings.Cut(kv, "=")
		if !ok {
			c.errs = append(c.errs, fmt.Errorf("%s: %q is not NAME=VALUE", key, kv))
			continue
		}
		out[strings.TrimSpace(k)] = val
	}
	return out
}

func splitList(s string) []string {
	var out []string
	for _, e := range strings.Split(s, ",") {
		if e = strings.TrimSpace(e); e != "" {
			out = append(out, e)
		}
	}
	return out
}

var (
	envName        = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)
	placeholder    = regexp.MustCompile(`\$\{([^}]*)\}`)
	scheduleSyntax = regexp.MustCompile(`^(rate|cron|at)\(.+\)$`)
)

// reservedEnv are the variables the stack sets itself.
func reservedEnv() []string {
	return []string{EnvRole, EnvTable, EnvBucket, EnvStateMachineArn, EnvModelSecretArn, "KEEL_RUN_ID", "KEEL_TASK_TOKEN"}
}

// Substitutions are the placeholder names NewRunStateMachine fills.
func Substitutions() []string {
	return []string{
		SubstStepFunctionArn, SubstApprovalFunctionArn, SubstFinalizeFunctionArn,
		SubstClusterArn, SubstTaskDefinitionArn, SubstSubnetIds, SubstSecurityGroupIds, SubstAssignPublicIP, SubstContainerName,
	}
}

// DefinitionPlaceholders returns the distinct ${Name} placeholders of a
// state machine definition, sorted.
func DefinitionPlaceholders(def []byte) []string {
	var out []string
	for _, m := range placeholder.FindAllSubmatch(def, -1) {
		if name := string(m[1]); !slices.Contains(out, name) {
			out = append(out, name)
		}
	}
	slices.Sort(out)
	return out
}

// Validate reports every problem with props that would otherwise surface
// as a build or CDK error (keel:app missing or outside any module) or,
// worse, only at deploy time (an unsubstituted placeholder, an invalid
// Fargate size). It does not build the app: BuildApp does, after it.
func (p KeelStackProps) Validate() error {
	p = p.withDefaults()
	var errs []error
	if p.AssetRoot == "" {
		return errors.New("AssetRoot (keel:assetRoot) is empty")
	}
	if _, err := p.ResolveApp(); err != nil {
		errs = append(errs, err)
	}
	if def, err := os.ReadFile(p.DefinitionFile()); err != nil {
		errs = append(errs, fmt.Errorf("state machine definition: %w", err))
	} else if !json.Valid(def) {
		errs = append(errs, fmt.Errorf("state machine definition %s is not valid JSON", p.DefinitionFile()))
	} else {
		for _, name := range DefinitionPlaceholders(def) {
			if !slices.Contains(Substitutions(), name) {
				errs = append(errs, fmt.Errorf("state machine definition uses ${%s}, which the stack does not substitute", name))
			}
		}
	}
	if !validFargateSize(p.TaskCPU, p.TaskMemoryMiB) {
		errs = append(errs, fmt.Errorf("fargate task: %d CPU units with %d MiB is not a Fargate size", p.TaskCPU, p.TaskMemoryMiB))
	}
	if p.NATGateways < 0 || p.NATGateways > 2 {
		errs = append(errs, fmt.Errorf("natGateways: %d, want 0 (public subnets), 1 or 2 (private subnets behind NAT gateways)", p.NATGateways))
	}
	if n := len(p.AvailabilityZones); n != 0 && n != 2 {
		errs = append(errs, fmt.Errorf("availabilityZones: %d given, want 2", n))
	} else if n == 0 && p.Env != nil && (p.Env.Account != nil || p.Env.Region != nil) {
		// An environment-specific stack would look its zones up (with
		// credentials) at synthesis; an agnostic one lets CloudFormation
		// pick them.
		errs = append(errs, errors.New("an environment-specific stack needs availabilityZones: synthesis makes no lookups"))
	}
	if (p.JWTIssuer == "") != (len(p.JWTAudience) == 0) {
		errs = append(errs, errors.New("jwtIssuer and jwtAudience go together: set both for JWT auth, neither for IAM auth"))
	} else if p.JWTIssuer != "" {
		if u, err := url.Parse(p.JWTIssuer); err != nil || u.Scheme != "https" || u.Host == "" {
			errs = append(errs, fmt.Errorf("jwtIssuer %q: want an https URL", p.JWTIssuer))
		}
	}
	for k := range p.Environment {
		if !envName.MatchString(k) {
			errs = append(errs, fmt.Errorf("environment: %q is not a variable name", k))
		}
		if slices.Contains(reservedEnv(), k) {
			errs = append(errs, fmt.Errorf("environment: %s is set by the stack", k))
		}
	}
	if !scheduleSyntax.MatchString(p.Schedule.Expression) {
		errs = append(errs, fmt.Errorf("scheduleExpression %q: want rate(...), cron(...) or at(...)", p.Schedule.Expression))
	}
	return errors.Join(errs...)
}

// validFargateSize reports whether cpu/memory is a Fargate task size
// (https://docs.aws.amazon.com/AmazonECS/latest/developerguide/fargate-tasks-services.html).
func validFargateSize(cpu, mem int) bool {
	between := func(lo, hi, step int) bool { return mem >= lo && mem <= hi && (mem-lo)%step == 0 }
	switch cpu {
	case 256:
		return mem == 512 || mem == 1024 || mem == 2048
	case 512:
		return between(1024, 4096, 1024)
	case 1024:
		return between(2048, 8192, 1024)
	case 2048:
		return between(4096, 16384, 1024)
	case 4096:
		return between(8192, 30720, 1024)
	case 8192:
		return between(16384, 61440, 4096)
	case 16384:
		return between(32768, 122880, 8192)
	}
	return false
}
