package cost

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
)

// HoursPerMonth is the month hourly prices are quoted over (365 × 24 / 12),
// as AWS's own calculator does.
const HoursPerMonth = 730

// IdleReport is what a deployment costs while nothing runs, read from its
// synthesized CloudFormation template ([IdleCost]): every resource that
// bills by the hour or the month whether or not a run exists, and the
// per-GB-month rates of what it stores at rest. Request-priced resources
// (Lambda, Step Functions, on-demand DynamoDB, S3 requests, an HTTP API,
// Fargate tasks) cost nothing idle and are not listed.
type IdleReport struct {
	// Types counts the template's resources by type.
	Types map[string]int `json:"types"`
	// Lines are the resources billed while idle, in template order of
	// type then logical id. A line with Priced false bills while idle but
	// has no price in the table: USDMonth is then a lower bound.
	Lines    []IdleLine `json:"lines"`
	USDMonth float64    `json:"usd_month"`
	// Storage are the per-GB-month rates of the data the deployment keeps
	// at rest: nothing while empty, billed by size as it fills.
	Storage   []StorageRate `json:"storage"`
	PriceDate string        `json:"price_date"`
	Region    string        `json:"region"`
	Notes     []string      `json:"notes"`
}

// IdleLine is one resource billed while nothing runs.
type IdleLine struct {
	Resource string  `json:"resource"` // logical id
	Type     string  `json:"type"`
	What     string  `json:"what"`     // "NAT gateway", "Elastic IP"...
	Quantity float64 `json:"quantity"` // billed units: zones, capacity units, GB
	Unit     string  `json:"unit"`
	USDHour  float64 `json:"usd_hour"`
	USDMonth float64 `json:"usd_month"`
	Priced   bool    `json:"priced"`
}

// StorageRate is what one kind of stored data costs per GB-month.
type StorageRate struct {
	Part          string  `json:"part"`
	Count         int     `json:"count"` // resources holding it
	Of            string  `json:"of"`    // "table", "bucket", "log group"
	USDPerGBMonth float64 `json:"usd_per_gb_month"`
}

// Hourly reports whether any resource bills while idle.
func (r IdleReport) Hourly() bool { return len(r.Lines) > 0 }

// cfnTemplate is the part of a CloudFormation template IdleCost reads.
type cfnTemplate struct {
	Resources map[string]cfnResource `json:"Resources"`
}

type cfnResource struct {
	Type       string         `json:"Type"`
	Properties map[string]any `json:"Properties"`
}

// IdleCost reads a CloudFormation template (JSON, as `cdk synth` writes
// it to cdk.out) and prices what it bills while nothing runs with p.
// Properties that are not literals (a Ref, an Fn::If) count as their
// CloudFormation default, except where the line says otherwise.
func IdleCost(template []byte, p Prices) (IdleReport, error) {
	var t cfnTemplate
	if err := json.Unmarshal(template, &t); err != nil {
		return IdleReport{}, fmt.Errorf("template: %w", err)
	}
	if len(t.Resources) == 0 {
		return IdleReport{}, fmt.Errorf("template: no Resources: not a CloudFormation template")
	}
	r := IdleReport{Types: map[string]int{}, PriceDate: p.Date, Region: p.Region}
	ids := make([]string, 0, len(t.Resources))
	for id, res := range t.Resources {
		ids = append(ids, id)
		r.Types[res.Type]++
	}
	slices.SortFunc(ids, func(a, b string) int {
		if c := strings.Compare(t.Resources[a].Type, t.Resources[b].Type); c != 0 {
			return c
		}
		return strings.Compare(a, b)
	})
	for _, id := range ids {
		for _, l := range idleLines(id, t.Resources[id], t, p) {
			if l.Priced {
				l.USDMonth = l.USDHour * HoursPerMonth
			}
			r.USDMonth += l.USDMonth
			r.Lines = append(r.Lines, l)
		}
	}
	r.Storage = storageRates(t, p)
	r.Notes = idleNotes(t)
	return r, nil
}

// idleNotes are what the report cannot see in the template.
func idleNotes(t cfnTemplate) []string {
	notes := []string{
		"use is billed on top when something runs: requests, compute, data transfer (a NAT gateway also per GB it processes)",
		"assets (Lambda code, the task image) live in the CDK bootstrap bucket and ECR repository, outside the template, at their storage rates",
		"free tiers are not subtracted",
	}
	for _, res := range t.Resources {
		if res.Type != "AWS::StepFunctions::StateMachine" {
			continue
		}
		subs, _ := res.Properties["DefinitionSubstitutions"].(map[string]any)
		if subs["AssignPublicIp"] == "ENABLED" {
			notes = append(notes, "the Fargate task runs with a public IPv4 address: the public IPv4 hourly price while a task runs, nothing idle")
		}
	}
	return notes
}

// storageRates lists the per-GB-month rates of what the template stores.
func storageRates(t cfnTemplate, p Prices) []StorageRate {
	var tables, pitr, buckets, logs int
	for _, res := range t.Resources {
		switch res.Type {
		case "AWS::DynamoDB::Table", "AWS::DynamoDB::GlobalTable":
			tables++
			spec, _ := res.Properties["PointInTimeRecoverySpecification"].(map[string]any)
			if spec["PointInTimeRecoveryEnabled"] == true {
				pitr++
			}
		case "AWS::S3::Bucket":
			buckets++
		case "AWS::Logs::LogGroup":
			logs++
		}
	}
	var out []StorageRate
	add := func(part string, n int, of string, usd float64) {
		if n > 0 {
			out = append(out, StorageRate{Part: part, Count: n, Of: of, USDPerGBMonth: usd})
		}
	}
	add("DynamoDB", tables, "table", p.DynamoGBMonth)
	add("DynamoDB PITR", pitr, "table", p.DynamoPITRGBMonth)
	add("S3 Standard", buckets, "bucket", p.S3GBMonth)
	add("CloudWatch Logs", logs, "log group", p.LogsGBMonth)
	return out
}

// Print writes the report: the idle monthly total and each line billed
// while idle, then the storage rates, the price table and the notes.
func (r IdleReport) Print(w io.Writer) error {
	n := 0
	for _, c := range r.Types {
		n += c
	}
	bound, unpriced := "", 0
	for _, l := range r.Lines {
		if !l.Priced {
			unpriced++
		}
	}
	if unpriced > 0 {
		bound = "at least "
	}
	switch {
	case len(r.Lines) == 0:
		fmt.Fprintf(w, "idle: $%.2f/month: nothing in the template bills by the hour (%d resources of %d types)\n", r.USDMonth, n, len(r.Types))
	default:
		fmt.Fprintf(w, "idle: %s$%.2f/month: %d resource(s) bill while nothing runs (%d resources of %d types)\n", bound, r.USDMonth, len(r.Lines), n, len(r.Types))
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	for _, l := range r.Lines {
		if !l.Priced {
			fmt.Fprintf(tw, "  %s\t%s\t\tnot priced here\t\n", l.What, l.Resource)
			continue
		}
		fmt.Fprintf(tw, "  %s\t%s\t%s %s\t$%s/h\t$%.2f/month\n", l.What, l.Resource, qty(l.Quantity), plural(l.Unit, l.Quantity), price(l.USDHour), l.USDMonth)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	parts := make([]string, 0, len(r.Storage))
	for _, s := range r.Storage {
		of := s.Of
		if s.Count != 1 {
			of += "s"
		}
		parts = append(parts, fmt.Sprintf("%s $%s (%d %s)", s.Part, price(s.USDPerGBMonth), s.Count, of))
	}
	if len(parts) == 0 {
		parts = append(parts, "nothing stored")
	}
	fmt.Fprintf(w, "storage at rest, per GB-month (nothing while empty): %s\n", strings.Join(parts, ", "))
	fmt.Fprintf(w, "prices: %s list prices of %s, %d hours a month\n", r.Region, r.PriceDate, HoursPerMonth)
	for _, note := range r.Notes {
		fmt.Fprintf(w, "note: %s\n", note)
	}
	return nil
}

// plural is a unit for qty of it: "2 zones", "10 WCU".
func plural(unit string, qty float64) string {
	if qty == 1 || unit == "" || strings.ToUpper(unit) == unit {
		return unit
	}
	if strings.HasSuffix(unit, "s") {
		return unit + "es"
	}
	return unit + "s"
}

// price renders a price with the digits it has (0.045, 0.0225, 0.25),
// to a millionth of a dollar and at least to the cent.
func price(v float64) string {
	s := strconv.FormatFloat(math.Round(v*1e6)/1e6, 'f', -1, 64)
	if i := strings.IndexByte(s, '.'); i < 0 || len(s)-i < 3 {
		return fmt.Sprintf("%.2f", v) // whole cents: 0.20, not 0.2
	}
	return s
}
