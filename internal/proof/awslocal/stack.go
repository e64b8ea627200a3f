package awslocal

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"sort"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	awss3 "github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/sfn"
)

// Region and Account are moto's defaults, the ones the ARNs carry. A
// LocalStack world signs with Account as its access key id, which
// LocalStack takes for the account (its own default is 000000000000).
const (
	Region  = "us-east-1"
	Account = "123456789012"
)

// Interpreter is what runs the state machine of a stack.
type Interpreter string

const (
	// TargetEngine is the target's own Step Functions interpreter:
	// moto's (ported from LocalStack's) or LocalStack's.
	TargetEngine Interpreter = "target"
	// KeelExecutor is internal/aws/states, the executor `keel dev` runs.
	KeelExecutor Interpreter = "keel"
)

// World is what every stack is deployed into: a target (moto with
// emulators, or LocalStack), its AWS endpoint and the template.
type World struct {
	Target   Target
	Template *Template
	Dir      string     // logs and state
	AWS      aws.Config // the target's endpoint, test credentials
	Lambda   *LambdaAPI // the target's Lambda API
	// SFNURL is the target's Step Functions endpoint.
	SFNURL string
}

// Label names an interpreter as the results print it: the target's name
// for its own interpreter ("moto", "localstack"), "keel" for Keel's.
func (w *World) Label(in Interpreter) string {
	if in == TargetEngine {
		return w.Target.Name()
	}
	return string(in)
}

// StackOptions vary one deployment.
type StackOptions struct {
	Name        string // unique among the world's stacks
	Interpreter Interpreter
	// Env is added to every function's environment (deploy-time
	// configuration, as CDK props would add it).
	Env map[string]string
	// LoopBound, when positive, replaces the definition's loop bound (the
	// Route choice on $.loop that leads to Rollover), so a test reaches
	// rollover in a few steps. It is the one change made to the
	// definition.
	LoopBound int
	// Program, when set, is the Go package (relative to the module root)
	// the functions run instead of the stock ./cmd/keel: a program with
	// agents of its own, as a user deploys it. Targets that package only
	// ./cmd/keel say so in Unsupported.
	Program string
}

// Function is one deployed Lambda function.
type Function struct {
	Logical, Name, ARN, Role string
	Sandbox                  *Sandbox
	// Version is the published version this sandbox serves ("":
	// $LATEST); spec is how it was started, for a redeploy.
	Version string
	spec    FunctionSpec
}

// route is the key invocations of fn are routed by: NAME, or NAME:N for
// a published version.
func (fn *Function) route() string {
	if fn.Version == "" {
		return fn.Name
	}
	return fn.Name + ":" + fn.Version
}

// Stack is one deployment of the template.
type Stack struct {
	Opts            StackOptions
	Table, Bucket   string
	StateMachineARN string
	Functions       map[string]*Function // by KEEL_ROLE; a published role by its live version
	// Serving are the sandboxes of versions no longer live (a pinned
	// run's Steps still run there) and the $LATEST of published roles.
	Serving []*Function
	// SFN is the Step Functions API the functions use: moto's, or the
	// Keel executor's endpoint.
	SFN    *sfn.Client
	SFNURL string
	world  *World
	keel   *keelSFN
	// principal is the IAM caller of the API Gateway events the tests
	// send; empty: the fixture's.
	principal string
	physical  *Physical
}

// Deploy creates a stack's resources from the template and starts a
// sandbox per function.
func (w *World) Deploy(ctx context.Context, opts StackOptions) (_ *Stack, err error) {
	t := w.Template
	s := &Stack{Opts: opts, Functions: map[string]*Function{}, world: w}
	defer func() {
		if err != nil {
			s.Close()
		}
	}()
	suffix := strings.ToUpper(randHex(4))
	tableID, err := t.Only("AWS::DynamoDB::Table", "Storage")
	if err != nil {
		return nil, err
	}
	bucketID, err := t.Only("AWS::S3::Bucket", "Storage")
	if err != nil {
		return nil, err
	}
	smID, err := t.Only("AWS::StepFunctions::StateMachine", "Run")
	if err != nil {
		return nil, err
	}
	smName := "Keel-" + opts.Name + "-RunStateMachine-" + suffix
	if opts.Interpreter == KeelExecutor {
		if s.keel, err = startKeelSFN(ctx, w, opts.Name); err != nil {
			return nil, err
		}
		s.SFNURL = s.keel.url
	} else {
		s.SFNURL = w.SFNURL
	}
	s.SFN = sfn.NewFromConfig(w.AWS, func(o *sfn.Options) { o.BaseEndpoint = aws.String(s.SFNURL) })
	s.physical = physicalIDs(t, opts.Name, suffix)
	if err := versionIDs(t, s.physical); err != nil {
		return nil, err
	}
	if s.keel != nil {
		s.physical.Refs[smID] = s.keel.exec.StateMachineARN(smName)
		s.physical.Attrs[smID]["Arn"] = s.physical.Refs[smID]
	} else {
		s.physical.Refs[smID] = fmt.Sprintf("arn:aws:states:%s:%s:stateMachine:%s", Region, Account, smName)
	}
	s.StateMachineARN = s.physical.Refs[smID]
	s.Table, s.Bucket = s.physical.Refs[tableID], s.physical.Refs[bucketID]

	// What is made, and in which order, is the plan of the template
	// (Plan); the template has one table, bucket and state machine.
	for _, r := range Plan(t) {
		switch r.Action {
		case CreateTable:
			err = s.createTable(ctx, r.Logical)
		case CreateBucket:
			err = s.createBucket(ctx, r.Logical)
		case CreateRole:
			err = s.createRole(ctx, r.Logical)
		case CreateFunction:
			err = s.createFunction(ctx, r.Logical)
		case PublishVersion:
			err = s.publishVersion(ctx, r.Logical)
		case CreateAlias:
			err = s.createAlias(ctx, r.Logical)
		case CreateStateMachine:
			err = s.createStateMachine(ctx, r.Logical, smName)
		}
		if err != nil {
			return nil, err
		}
	}
	return s, nil
}

// ids are the logical ids of the resources of a type, sorted.
func (t *Template) ids(typ string) []string {
	var ids []string
	for id, r := range t.Resources {
		if r.Type == typ {
			ids = append(ids, id)
		}
	}
	sort.Strings(ids)
	return ids
}

// createRole creates a role with its trust policy (the permissions
// policies are not created: moto does not enforce IAM).
func (s *Stack) createRole(ctx context.Context, id string) error {
	p, err := s.props(id)
	if err != nil {
		return err
	}
	doc, err := json.Marshal(p["AssumeRolePolicyDocument"])
	if err != nil {
		return err
	}
	return s.world.Lambda.CreateRole(ctx, s.physical.Refs[id], string(doc))
}

// maxPhysicalName is the longest physical name physicalIDs makes.
const maxPhysicalName = 63

// physicalIDs names every resource of the template as CloudFormation
// would (stack-logical-suffix), with the attributes Fn::GetAtt reads.
func physicalIDs(t *Template, stack, suffix string) *Physical {
	p := &Physical{Region: Region, Account: Account, Refs: map[string]string{}, Attrs: map[string]map[string]string{}}
	for id, r := range t.Resources {
		// As CloudFormation does, the logical id is cut so the name fits
		// the tightest limit of the types made (a bucket's 63; IAM
		// roles and Lambda functions allow 64): LocalStack validates
		// them as AWS does.
		keep := max(8, min(len(id), maxPhysicalName-len("Keel-"+stack+"--"+suffix)))
		name := "Keel-" + stack + "-" + id[:min(len(id), keep)] + "-" + suffix
		attrs := map[string]string{}
		svc := strings.ToLower(strings.Split(r.Type, "::")[1])
		switch r.Type {
		case "AWS::S3::Bucket":
			name = strings.ToLower(name)
			attrs["Arn"] = "arn:aws:s3:::" + name
		case "AWS::Lambda::Function":
			attrs["Arn"] = fmt.Sprintf("arn:aws:lambda:%s:%s:function:%s", Region, Account, name)
		case "AWS::IAM::Role":
			attrs["Arn"] = fmt.Sprintf("arn:aws:iam::%s:role/%s", Account, name)
		case "AWS::EC2::SecurityGroup":
			attrs["GroupId"] = "sg-" + strings.ToLower(suffix) + strings.ToLower(randHex(4))
		case "AWS::EC2::Subnet":
			name = "subnet-" + strings.ToLower(randHex(8))
		default:
			attrs["Arn"] = fmt.Sprintf("arn:aws:%s:%s:%s:%s/%s", svc, Region, Account, strings.ToLower(strings.Split(r.Type, "::")[2]), name)
		}
		p.Refs[id], p.Attrs[id] = name, attrs
	}
	return p
}

func (s *Stack) props(id string) (map[string]any, error) {
	r, err := s.physical.Resolve(s.world.Template.Resources[id].Properties)
	if err != nil {
		return nil, fmt.Errorf("awslocal: %s: %w", id, err)
	}
	return r.(map[string]any), nil
}

func (s *Stack) createTable(ctx context.Context, id string) error {
	p, err := s.props(id)
	if err != nil {
		return err
	}
	// CreateTable's request has the template's property names.
	raw, _ := json.Marshal(p)
	var in dynamodb.CreateTableInput
	if err := json.Unmarshal(raw, &in); err != nil {
		return fmt.Errorf("awslocal: table %s: %w", id, err)
	}
	in.TableName = aws.String(s.Table)
	db := dynamodb.NewFromConfig(s.world.AWS)
	if _, err := db.CreateTable(ctx, &in); err != nil {
		return fmt.Errorf("awslocal: create table: %w", err)
	}
	if pitr, _ := p["PointInTimeRecoverySpecification"].(map[string]any); pitr["PointInTimeRecoveryEnabled"] == true {
		if _, err := db.UpdateContinuousBackups(ctx, &dynamodb.UpdateContinuousBackupsInput{TableName: in.TableName,
			PointInTimeRecoverySpecification: &ddbtypes.PointInTimeRecoverySpecification{PointInTimeRecoveryEnabled: aws.Bool(true)}}); err != nil {
			return fmt.Errorf("awslocal: table point-in-time recovery: %w", err)
		}
	}
	return nil
}

func (s *Stack) createBucket(ctx context.Context, id string) error {
	if _, err := s.props(id); err != nil {
		return err
	}
	c := awss3.NewFromConfig(s.world.AWS, func(o *awss3.Options) { o.UsePathStyle = true })
	if _, err := c.CreateBucket(ctx, &awss3.CreateBucketInput{Bucket: aws.String(s.Bucket)}); err != nil {
		return fmt.Errorf("awslocal: create bucket: %w", err)
	}
	return nil
}

func (s *Stack) createFunction(ctx context.Context, id string) error {
	p, err := s.props(id)
	if err != nil {
		return err
	}
	var keelURL string
	if s.keel != nil {
		keelURL = s.SFNURL
	}
	env, err := functionEnv(p, s.Opts.Env, s.world.Target.FunctionEnv(keelURL))
	if err != nil {
		return fmt.Errorf("awslocal: function %s: %w", id, err)
	}
	role, _ := env["KEEL_ROLE"].(string)
	tcode, _ := p["Code"].(map[string]any)
	code, arch, err := s.world.Target.Package(ctx, s.world.Template, id, tcode)
	if err != nil {
		return err
	}
	name := s.physical.Refs[id]
	if err := s.world.Lambda.CreateFunction(ctx, createFunctionRequest(name, p, env, code, arch)); err != nil {
		return err
	}
	fn := &Function{Logical: id, Name: name, ARN: s.physical.Attrs[id]["Arn"], Role: role,
		spec: FunctionSpec{Name: name, Timeout: p["Timeout"], Memory: p["MemorySize"], Variables: env, SFNURL: s.SFNURL, Program: s.Opts.Program}}
	s.Functions[role] = fn
	return s.world.Target.Started(ctx, fn, fn.spec)
}

// Close stops the stack's sandboxes and its Keel executor.
func (s *Stack) Close() {
	for _, f := range s.Functions {
		s.world.Target.Stop(f)
	}
	for _, f := range s.Serving {
		s.world.Target.Stop(f)
	}
	if s.keel != nil {
		s.keel.close()
	}
}

func randHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// MinimalEnv is the environment a sandbox starts from: the PATH and a HOME
// of its own, nothing of the caller's AWS configuration.
func MinimalEnv(home string) []string {
	return []string{"PATH=" + os.Getenv("PATH"), "HOME=" + home, "TMPDIR=" + os.TempDir(),
		"AWS_CONFIG_FILE=" + home + "/no-aws-config", "AWS_SHARED_CREDENTIALS_FILE=" + home + "/no-aws-credentials",
		"AWS_EC2_METADATA_DISABLED=true"}
}
