package cluster

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"
	"time"
)

// auditPolicy records every request at Metadata level: who, what verb, which object, which user
// agent, and the response code; no bodies but those of HPA patches (only tune --apply sends
// them: the test reads the resourceVersion they carry). The RequestReceived stage is kept
// because it is written before the request is served, so once a client has its answer the
// request is in the log.
const auditPolicy = `apiVersion: audit.k8s.io/v1
kind: Policy
rules:
- level: Request
  verbs: ["patch"]
  resources:
  - group: autoscaling
    resources: ["horizontalpodautoscalers"]
- level: Metadata
`

// AuditRequest is one API request as the audit log recorded it (all stages merged).
type AuditRequest struct {
	AuditID     string
	Verb        string
	RequestURI  string
	User        string
	Groups      []string
	UserAgent   string
	Resource    string
	Subresource string
	Namespace   string
	Name        string
	APIGroup    string
	Code        int
	Received    time.Time
	// RequestObject is the request's body, for the requests the policy logs it of (HPA
	// patches); nil for the others.
	RequestObject json.RawMessage
	// Completed is when the response was complete (zero until that stage is logged).
	Completed time.Time
}

// IsWrite reports whether the request asked the API server to change state. Creating an access
// or token review only asks a question (nothing is stored), so it is not a write.
func (r AuditRequest) IsWrite() bool {
	if r.APIGroup == "authorization.k8s.io" || r.APIGroup == "authentication.k8s.io" {
		return false
	}
	switch r.Verb {
	case "create", "update", "patch", "delete", "deletecollection":
		return true
	}
	return false
}

// String is a compact one-line form for test failure messages.
func (r AuditRequest) String() string {
	return fmt.Sprintf("%s %s (%s, %q) -> %d", r.Verb, r.RequestURI, r.User, r.UserAgent, r.Code)
}

// AuditMark is a position in the audit log; requests after it belong to what happened since.
type AuditMark int64

// auditEvent is the subset of audit.k8s.io/v1 Event the tests read.
type auditEvent struct {
	AuditID    string `json:"auditID"`
	Stage      string `json:"stage"`
	RequestURI string `json:"requestURI"`
	Verb       string `json:"verb"`
	User       struct {
		Username string   `json:"username"`
		Groups   []string `json:"groups"`
	} `json:"user"`
	UserAgent string `json:"userAgent"`
	ObjectRef *struct {
		Resource    string `json:"resource"`
		Namespace   string `json:"namespace"`
		Name        string `json:"name"`
		APIGroup    string `json:"apiGroup"`
		Subresource string `json:"subresource"`
	} `json:"objectRef"`
	ResponseStatus *struct {
		Code int `json:"code"`
	} `json:"responseStatus"`
	RequestObject            json.RawMessage `json:"requestObject"`
	RequestReceivedTimestamp time.Time       `json:"requestReceivedTimestamp"`
	StageTimestamp           time.Time       `json:"stageTimestamp"`
}

// parseAudit reads JSON-lines audit events from r and merges the stages of each request,
// in the order the requests were first seen.
func parseAudit(r io.Reader, f AuditFilter) ([]AuditRequest, error) {
	// Tests poll the log from marks minutes old while the suite runs; decoding only the lines
	// that can be the user's keeps that from loading the machine the cluster runs on. The API
	// server writes compact JSON with encoding/json's escaping, as json.Marshal quotes here.
	var needle []byte
	if f.User != "" {
		quoted, err := json.Marshal(f.User)
		if err != nil {
			return nil, fmt.Errorf("audit filter: %w", err)
		}
		needle = append([]byte(`"username":`), quoted...)
	}
	byID := map[string]*AuditRequest{}
	var order []string
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), 16<<20)
	for sc.Scan() {
		line := sc.Bytes()
		if len(bytes.TrimSpace(line)) == 0 || needle != nil && !bytes.Contains(line, needle) {
			continue
		}
		var ev auditEvent
		if err := json.Unmarshal(line, &ev); err != nil {
			// The API server may be writing the last line right now; a torn line is not an error.
			continue
		}
		req, ok := byID[ev.AuditID]
		if !ok {
			req = &AuditRequest{AuditID: ev.AuditID}
			byID[ev.AuditID] = req
			order = append(order, ev.AuditID)
		}
		req.Verb, req.RequestURI, req.UserAgent = ev.Verb, ev.RequestURI, ev.UserAgent
		req.User, req.Groups = ev.User.Username, ev.User.Groups
		req.Received = ev.RequestReceivedTimestamp
		if o := ev.ObjectRef; o != nil {
			req.Resource, req.Subresource, req.Namespace, req.Name, req.APIGroup = o.Resource, o.Subresource, o.Namespace, o.Name, o.APIGroup
		}
		if ev.ResponseStatus != nil {
			req.Code = ev.ResponseStatus.Code
		}
		if len(ev.RequestObject) > 0 {
			req.RequestObject = ev.RequestObject
		}
		if ev.Stage == "ResponseComplete" {
			req.Completed = ev.StageTimestamp
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("reading audit log: %w", err)
	}
	out := make([]AuditRequest, 0, len(order))
	for _, id := range order {
		if r := byID[id]; f.match(*r) {
			out = append(out, *r)
		}
	}
	return out, nil
}

// AuditFilter selects requests; zero fields match everything.
type AuditFilter struct {
	User            string
	UserAgentPrefix string
	Namespace       string
	WritesOnly      bool
}

func (f AuditFilter) match(r AuditRequest) bool {
	return (f.User == "" || r.User == f.User) &&
		(f.UserAgentPrefix == "" || strings.HasPrefix(r.UserAgent, f.UserAgentPrefix)) &&
		(f.Namespace == "" || r.Namespace == f.Namespace) &&
		(!f.WritesOnly || r.IsWrite())
}

// auditLog reads the audit log file of one cluster.
type auditLog struct{ path string }

func (a auditLog) mark() (AuditMark, error) {
	st, err := os.Stat(a.path)
	if os.IsNotExist(err) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("audit log: %w", err)
	}
	return AuditMark(st.Size()), nil
}

// endLine appends a newline when the log ends in the middle of a line (its writer was killed).
func (a auditLog) endLine() error {
	f, err := os.OpenFile(a.path, os.O_RDWR, 0)
	if os.IsNotExist(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("audit log: %w", err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil || st.Size() == 0 {
		return err
	}
	last := make([]byte, 1)
	if _, err := f.ReadAt(last, st.Size()-1); err != nil {
		return fmt.Errorf("audit log: %w", err)
	}
	if last[0] == '\n' {
		return nil
	}
	if _, err := f.WriteAt([]byte("\n"), st.Size()); err != nil {
		return fmt.Errorf("audit log: ending a torn line: %w", err)
	}
	return nil
}

func (a auditLog) since(m AuditMark, f AuditFilter) ([]AuditRequest, error) {
	file, err := os.Open(a.path)
	if err != nil {
		return nil, fmt.Errorf("opening audit log: %w", err)
	}
	defer file.Close()
	if _, err := file.Seek(int64(m), io.SeekStart); err != nil {
		return nil, fmt.Errorf("seeking audit log: %w", err)
	}
	return parseAudit(file, f)
}

// CountByUserAgent groups requests by user agent, for reports and failure messages.
func CountByUserAgent(reqs []AuditRequest) map[string]int {
	out := map[string]int{}
	for _, r := range reqs {
		out[r.UserAgent]++
	}
	return out
}

// SummarizeAudit renders requests one per line, sorted, for a readable failure message.
func SummarizeAudit(reqs []AuditRequest) string {
	lines := make([]string, 0, len(reqs))
	for _, r := range reqs {
		lines = append(lines, "  "+r.String())
	}
	sort.Strings(lines)
	return strings.Join(lines, "\n")
}
