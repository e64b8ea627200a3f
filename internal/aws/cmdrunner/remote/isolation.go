package remote

import "github.com/keelrun/keel/internal/sandbox"

// Isolation implements runspace.Remote: the facts the deployment holds
// (infra/cdk asserts each; docs/aws-sandbox.md says which ran where).
func (c *Client) Isolation() sandbox.Isolation {
	return sandbox.Isolation{
		Backend:  "aws-lambda-command-runner",
		Isolated: true,
		Facts: []string{
			"commands run in the Lambda function " + c.Function + ", invoked with the run id as its tenant id (tenant isolation PER_TENANT: an execution environment serves one run)",
			"the runner's execution role holds no S3, DynamoDB or Secrets Manager permission: the workspace comes through presigned GETs of the run's manifest and blobs, and goes back through a presigned POST limited to one staging prefix of the run, read back and hash-checked by this worker",
			"the runner is in isolated subnets with no route out but the S3 gateway endpoint (policy: the Keel bucket only); its security group allows no inbound and outbound only to S3's prefix list",
			"the tree is materialized in a fresh /tmp directory, wiped before and after; every blob is checked against its hash",
			"the command gets an empty environment (PATH, HOME, LANG): the runtime's AWS credentials are not passed; rlimits: CPU, address space, processes, file size; wall time and output capped",
		},
		Gaps: []string{
			"the command runs with the runner's uid: it can read /proc of the runner process (its environment holds the runner role's credentials, which grant only its own log group) and the presigned URLs of this one command",
			"commands with network (AllowHosts) are refused on AWS",
		},
	}
}
