package api_test

import (
	"testing"
	"time"
)

// TestDeadlineTenCalendarYears is issue #32 item 9: "at most 10 years
// ahead" was 3,650 days, which refused a deadline on the date ten years
// on (a decade holds two or three leap days). Now the bound is the date.
func TestDeadlineTenCalendarYears(t *testing.T) {
	e := newEnv(t, nil)
	create := func(d time.Time) int {
		code, _, body := e.do("POST", "/v1/runs", aliceToken,
			`{"agent":"research","input":"hi","limits":{"deadline":"`+d.UTC().Format(time.RFC3339)+`"}}`, nil)
		if code != 201 && code != 400 {
			t.Fatalf("create: %d %s", code, body)
		}
		return code
	}
	tenYears := time.Now().AddDate(10, 0, 0).Add(-time.Hour)
	if code := create(tenYears); code != 201 {
		t.Errorf("a deadline an hour short of ten calendar years: %d, want 201", code)
	}
	if code := create(time.Now().AddDate(10, 0, 2)); code != 400 {
		t.Errorf("a deadline past ten calendar years: %d, want 400", code)
	}
}
