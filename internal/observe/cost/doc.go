// Package cost says what one run costs on AWS, and on which part: the
// Step Functions state transitions, Lambda requests and GB-seconds,
// DynamoDB write and read request units, S3 requests, Fargate seconds, and
// the model's tokens and spend.
//
// [Measure] derives a [Usage] from the run's own records (the run row, its
// event log, its checkpoints and artifacts) and the deployment's sizes
// ([Resources], the CDK defaults unless told otherwise); [Price] prices a
// Usage from a dated [Prices] table. The records say exactly how many
// Steps ran, when each began and last wrote, how many approvals and
// long-running tasks there were and how large each record is; the request
// units are derived from those sizes with DynamoDB's rounding (1 KB a
// write unit, 4 KB a strongly consistent read unit, transactions twice),
// so they are an estimate of what the store sent, not a meter reading.
// What the records cannot say (API calls beyond creating and deciding,
// CloudWatch, data transfer, storage over time) is left out and said so
// in [Report.Notes].
//
// [IdleCost] says what a deployment costs while nothing runs: it reads the
// synthesized CloudFormation template (cdk.out/STACK.template.json) and
// prices, from the same dated table, every resource that bills by the
// hour or the month whatever the traffic — NAT gateways, Elastic IPs,
// interface VPC endpoints, load balancers, provisioned capacity, keys and
// secrets — and names the always-on kinds it has no price for. Storage at
// rest (DynamoDB, point-in-time recovery, S3, CloudWatch Logs) is a
// separate line of per-GB-month rates: it is nothing while empty and
// grows with what runs leave behind.
package cost
