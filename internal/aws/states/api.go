package states

import (
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// NewHandler serves the Step Functions API subset Keel calls, over the AWS
// JSON 1.0 protocol (POST /, X-Amz-Target: AWSStepFunctions.<Operation>,
// Content-Type: application/x-amz-json-1.0), so that the
// aws-sdk-go-v2/service/sfn client works against it through BaseEndpoint.
// It checks no signature itself: whoever serves it must (keel dev serves
// it on a loopback listener of its own behind a SigV4 verifier).
func NewHandler(e *Executor, log *slog.Logger) http.Handler {
	if log == nil {
		log = slog.Default()
	}
	return &apiHandler{e: e, log: log}
}

type apiHandler struct {
	e   *Executor
	log *slog.Logger
}

func epoch(t time.Time) json.Number {
	return json.Number(strconv.FormatFloat(float64(t.UnixMilli())/1000, 'f', 3, 64))
}

// apiRequest holds the fields of every action ServeHTTP serves; each
// action reads its own.
type apiRequest struct {
	StateMachineArn string `json:"stateMachineArn"`
	ExecutionArn    string `json:"executionArn"`
	Name            string `json:"name"`
	Input           string `json:"input"`
	Output          string `json:"output"`
	TaskToken       string `json:"taskToken"`
	Error           string `json:"error"`
	Cause           string `json:"cause"`
	MaxResults      int    `json:"maxResults"`
	NextToken       string `json:"nextToken"`
	ReverseOrder    bool   `json:"reverseOrder"`
}

// describeOutput is DescribeExecution's answer as the AWS API spells it;
// apart from ServeHTTP so that its switch reads one line or so an action.
func describeOutput(d ExecutionDescription) map[string]any {
	m := map[string]any{"executionArn": d.ExecutionArn, "stateMachineArn": d.StateMachineArn, "name": d.Name,
		"status": d.Status, "startDate": epoch(d.StartDate), "input": d.Input, "inputDetails": map[string]any{"included": true},
		"redriveCount": 0}
	if !d.StopDate.IsZero() {
		m["stopDate"] = epoch(d.StopDate)
	}
	if d.Output != nil {
		m["output"] = *d.Output
		m["outputDetails"] = map[string]any{"included": true}
	}
	if d.Error != nil {
		m["error"] = *d.Error
	}
	if d.Cause != nil {
		m["cause"] = *d.Cause
	}
	return m
}

func (h *apiHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		h.writeError(w, &APIError{Code: "UnknownOperationException", Message: "POST only"})
		return
	}
	op, ok := strings.CutPrefix(r.Header.Get("X-Amz-Target"), "AWSStepFunctions.")
	if !ok {
		h.writeError(w, &APIError{Code: "UnknownOperationException", Message: "missing or unknown X-Amz-Target"})
		return
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, 2*maxPayload))
	if err != nil {
		h.writeError(w, apiErr(CodeValidation, "read body: %v", err))
		return
	}
	ctx := r.Context()
	var in apiRequest
	if len(body) > 0 {
		if err := json.Unmarshal(body, &in); err != nil {
			h.writeError(w, apiErr("SerializationException", "request body: %v", err))
			return
		}
	}
	var out any
	switch op {
	case "StartExecution":
		var res StartExecutionOutput
		if res, err = h.e.StartExecution(ctx, StartExecutionInput{StateMachineArn: in.StateMachineArn, Name: in.Name, Input: in.Input}); err == nil {
			out = map[string]any{"executionArn": res.ExecutionArn, "startDate": epoch(res.StartDate)}
		}
	case "DescribeExecution":
		var d ExecutionDescription
		if d, err = h.e.DescribeExecution(ctx, in.ExecutionArn); err == nil {
			out = describeOutput(d)
		}
	case "StopExecution":
		var t time.Time
		if t, err = h.e.StopExecution(ctx, in.ExecutionArn, in.Error, in.Cause); err == nil {
			out = map[string]any{"stopDate": epoch(t)}
		}
	case "SendTaskSuccess":
		if err = h.e.SendTaskSuccess(ctx, in.TaskToken, in.Output); err == nil {
			out = map[string]any{}
		}
	case "SendTaskFailure":
		if err = h.e.SendTaskFailure(ctx, in.TaskToken, in.Error, in.Cause); err == nil {
			out = map[string]any{}
		}
	case "SendTaskHeartbeat":
		if err = h.e.SendTaskHeartbeat(ctx, in.TaskToken); err == nil {
			out = map[string]any{}
		}
	case "GetExecutionHistory":
		out, err = h.history(r, in.ExecutionArn, in.MaxResults, in.NextToken, in.ReverseOrder)
	default:
		err = &APIError{Code: "UnknownOperationException", Message: "operation not supported locally: " + op}
	}
	if err != nil {
		h.writeError(w, err)
		return
	}
	w.Header().Set("Content-Type", "application/x-amz-json-1.0")
	if err := json.NewEncoder(w).Encode(out); err != nil {
		h.log.Warn("states api: write response", "op", op, "err", err)
	}
}

func (h *apiHandler) history(r *http.Request, arn string, max int, next string, reverse bool) (any, error) {
	if max <= 0 || max > 1000 {
		max = 100
	}
	offset := 0
	if next != "" {
		n, err := strconv.Atoi(next)
		if err != nil || n < 0 {
			return nil, apiErr("InvalidToken", "invalid nextToken")
		}
		offset = n
	}
	evs, err := h.e.GetExecutionHistory(r.Context(), arn, offset, max+1, reverse)
	if err != nil {
		return nil, err
	}
	res := map[string]any{}
	if len(evs) > max {
		evs = evs[:max]
		res["nextToken"] = strconv.Itoa(offset + max)
	}
	list := make([]map[string]any, 0, len(evs))
	for _, ev := range evs {
		m := map[string]any{}
		if len(ev.Details) > 0 {
			if err := json.Unmarshal(ev.Details, &m); err != nil {
				return nil, err
			}
		}
		m["id"] = ev.ID
		m["previousEventId"] = ev.PreviousEventID
		m["type"] = ev.Type
		m["timestamp"] = epoch(ev.Timestamp)
		list = append(list, m)
	}
	res["events"] = list
	return res, nil
}

func (h *apiHandler) writeError(w http.ResponseWriter, err error) {
	var ae *APIError
	status := http.StatusBadRequest
	if !errors.As(err, &ae) {
		// Internal failures are logged here and not echoed to the client.
		h.log.Error("states api: internal error", "err", err)
		ae = &APIError{Code: "InternalServerError", Message: "internal error"}
		status = http.StatusInternalServerError
	}
	w.Header().Set("Content-Type", "application/x-amz-json-1.0")
	w.Header().Set("X-Amzn-ErrorType", ae.Code)
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(map[string]string{"__type": "com.amazonaws.swf.service.v2.model#" + ae.Code, "message": ae.Message})
}
