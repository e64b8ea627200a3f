package cost

import (
	"fmt"
	"io"
	"text/tabwriter"
)

// Line is one part of a run's cost.
type Line struct {
	Part     string  `json:"part"`
	Quantity float64 `json:"quantity"`
	Unit     string  `json:"unit"`
	USD      float64 `json:"usd"`
}

// Report is a run's usage priced: one line per part and their total.
type Report struct {
	RunID    string  `json:"run_id"`
	Usage    Usage   `json:"usage"`
	Lines    []Line  `json:"lines"`
	TotalUSD float64 `json:"total_usd"`
	// AWSUSD is the total less the model's spend.
	AWSUSD    float64   `json:"aws_usd"`
	PriceDate string    `json:"price_date"`
	Region    string    `json:"region"`
	Resources Resources `json:"resources"`
	Notes     []string  `json:"notes"`
}

// Notes every report carries: what the records cannot say.
var notes = []string{
	"DynamoDB units are derived from record sizes (1 KB a write unit, 4 KB a strongly consistent read unit, transactions twice), not metered",
	"API requests other than creating the run and deciding or adding to it, CloudWatch, data transfer and storage over time are not included",
	"free tiers are not subtracted",
}

// Price prices u from p.
func Price(runID string, u Usage, res Resources, p Prices) Report {
	taskHours := u.FargateSeconds / 3600
	lines := []Line{
		{"step functions", float64(u.StateTransitions), "state transitions", float64(u.StateTransitions) * p.StateTransition},
		{"lambda requests", float64(u.LambdaInvocations), "invocations", float64(u.LambdaInvocations) * p.LambdaRequest},
		{"lambda compute", u.LambdaGBSeconds, "GB-seconds", u.LambdaGBSeconds * p.LambdaGBSecond},
		{"dynamodb writes", float64(u.DynamoWRU), "write request units", float64(u.DynamoWRU) * p.DynamoWRU},
		{"dynamodb reads", float64(u.DynamoRRU), "read request units", float64(u.DynamoRRU) * p.DynamoRRU},
		{"s3 puts", float64(u.S3Puts), "requests", float64(u.S3Puts) * p.S3Put},
		{"s3 gets", float64(u.S3Gets), "requests", float64(u.S3Gets) * p.S3Get},
		{"fargate", u.FargateSeconds, "task-seconds", taskHours * (res.TaskVCPU*p.FargateVCPUHour + gb(res.TaskMemoryMiB)*p.FargateGBHour)},
		{"model", float64(u.Tokens), "tokens", float64(u.ModelSpendMicroUSD) / 1e6},
	}
	r := Report{RunID: runID, Usage: u, Lines: lines, PriceDate: p.Date, Region: p.Region, Resources: res, Notes: notes}
	for _, l := range lines {
		r.TotalUSD += l.USD
		if l.Part != "model" {
			r.AWSUSD += l.USD
		}
	}
	return r
}

// Print writes the report as a table.
func (r Report) Print(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(tw, "part\tquantity\tunit\tUSD\t\n")
	for _, l := range r.Lines {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%.6f\t\n", l.Part, qty(l.Quantity), l.Unit, l.USD)
	}
	fmt.Fprintf(tw, "aws\t\t\t%.6f\t\n", r.AWSUSD)
	fmt.Fprintf(tw, "total\t\t\t%.6f\t\n", r.TotalUSD)
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintf(w, "prices: %s list prices of %s; %d Steps (%.3f s)", r.Region, r.PriceDate, r.Usage.StepInvocations, r.Usage.StepSeconds)
	fmt.Fprintf(w, "; S3 bytes written %d\n", r.Usage.S3BytesWritten)
	for _, n := range r.Notes {
		fmt.Fprintf(w, "note: %s\n", n)
	}
	return nil
}

func qty(v float64) string {
	if v == float64(int64(v)) {
		return fmt.Sprint(int64(v))
	}
	return fmt.Sprintf("%.3f", v)
}
