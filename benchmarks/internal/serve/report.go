package serve

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// Report is what a server says about its run in its exit line, which reads
//
//	report accepted=12 mallocs=3456
//
// with keys in any order; a server that cannot count a figure leaves its key
// out (the C floor has no heap to count).
type Report struct {
	Accepted int64 // connections accepted, the runner's readiness probe included (with -dial: connections dialed)
	Mallocs  int64 // heap allocations from the first connection to exit; -1 if not reported
}

// reportPrefix starts the exit line, so it can be told from a stack's own logging.
const reportPrefix = "report "

// String formats r as the exit line, without a newline.
func (r Report) String() string {
	s := fmt.Sprintf("%saccepted=%d", reportPrefix, r.Accepted)
	if r.Mallocs >= 0 {
		s += fmt.Sprintf(" mallocs=%d", r.Mallocs)
	}
	return s
}

// ErrNoReport reports output that holds no report line.
var ErrNoReport = errors.New("serve: no report line")

// ErrBadReport reports a report line that does not parse.
var ErrBadReport = errors.New("serve: malformed report line")

// ParseReport finds the last report line in a server's standard output.
func ParseReport(out string) (Report, error) {
	i := strings.LastIndex(out, reportPrefix)
	if i < 0 || (i > 0 && out[i-1] != '\n') {
		return Report{}, ErrNoReport
	}
	line, _, _ := strings.Cut(out[i+len(reportPrefix):], "\n")
	r := Report{Accepted: -1, Mallocs: -1}
	for _, field := range strings.Fields(line) {
		k, v, ok := strings.Cut(field, "=")
		n, err := strconv.ParseInt(v, 10, 64)
		if !ok || err != nil {
			return Report{}, fmt.Errorf("%w: %q", ErrBadReport, field)
		}
		switch k {
		case "accepted":
			r.Accepted = n
		case "mallocs":
			r.Mallocs = n
		}
	}
	if r.Accepted < 0 {
		return Report{}, fmt.Errorf("%w: no accepted count", ErrBadReport)
	}
	return r, nil
}
