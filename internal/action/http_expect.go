package action

import (
	"strconv"
	"strings"
)

// `expect`: the statuses that count as success.

// parseStatusSet reads expect: a list of codes (200, "404") and ranges
// ("2xx", "200-204").
func parseStatusSet(v any) (statusSet, error) {
	list, ok := v.([]any)
	if !ok || len(list) == 0 {
		return nil, inputError("http", "expect: want a list of status codes or ranges such as [200, \"3xx\"]")
	}
	var set statusSet
	for _, it := range list {
		r, ok := parseStatusRange(it)
		if !ok {
			return nil, inputError("http", "expect: %v is not a status code (100-599), a class such as 2xx or a range such as 200-204", it)
		}
		set = append(set, r)
	}
	return set, nil
}

func parseStatusRange(v any) (statusRange, bool) {
	code := func(s string) (int, bool) {
		n, err := strconv.Atoi(s)
		return n, err == nil && len(s) == 3 && n >= 100 && n <= 599
	}
	switch x := v.(type) {
	case float64:
		n := int(x)
		if float64(n) != x || n < 100 || n > 599 {
			return statusRange{}, false
		}
		return statusRange{n, n, strconv.Itoa(n)}, true
	case string:
		if len(x) == 3 && x[1:] == "xx" && x[0] >= '1' && x[0] <= '5' {
			lo := int(x[0]-'0') * 100
			return statusRange{lo, lo + 99, x}, true
		}
		a, b, isRange := strings.Cut(x, "-")
		lo, ok1 := code(a)
		hi, ok2 := lo, ok1
		if isRange {
			hi, ok2 = code(b)
		}
		if !ok1 || !ok2 || hi < lo {
			return statusRange{}, false
		}
		return statusRange{lo, hi, x}, true
	}
	return statusRange{}, false
}

// statusRange is an inclusive range of status codes, with how it was
// written.
type statusRange struct {
	lo, hi int
	text   string
}

// statusSet is the statuses a step accepts.
type statusSet []statusRange

func (s statusSet) has(code int) bool {
	for _, r := range s {
		if code >= r.lo && code <= r.hi {
			return true
		}
	}
	return false
}

func (s statusSet) String() string {
	parts := make([]string, len(s))
	for i, r := range s {
		parts[i] = r.text
	}
	return strings.Join(parts, ", ")
}
