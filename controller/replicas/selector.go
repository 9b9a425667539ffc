package replicas

import (
	"strings"

	"k8s.io/apimachinery/pkg/labels"
)

// parseSelectorError returns labels.Parse's error for sel, or nil. Scale selectors are almost
// always plain "key=value,..." lists; those are recognised without labels.Parse, which costs
// about twenty allocations per call. Anything else goes through labels.Parse, so the fast path
// can only accept selectors labels.Parse accepts.
func parseSelectorError(sel string) error {
	if simpleEqualitySelector(sel) {
		return nil
	}
	_, err := labels.Parse(sel)
	return err
}

// simpleEqualitySelector reports whether sel is one or more "key=value" terms joined by commas,
// with valid label keys (optional DNS-subdomain prefix) and non-empty valid label values, and no
// whitespace.
func simpleEqualitySelector(sel string) bool {
	if sel == "" {
		return false
	}
	for term := range strings.SplitSeq(sel, ",") {
		key, value, ok := strings.Cut(term, "=")
		if !ok || !labelKey(key) || !labelName(value) {
			return false
		}
	}
	return true
}

func labelKey(k string) bool {
	prefix, name, hasPrefix := strings.Cut(k, "/")
	if !hasPrefix {
		return labelName(k)
	}
	return dnsSubdomain(prefix) && labelName(name)
}

// labelName is a qualified name's name part and a non-empty label value:
// at most 63 characters, alphanumeric at both ends, '-', '_' and '.' inside.
func labelName(s string) bool {
	if s == "" || len(s) > 63 || !alnum(s[0]) || !alnum(s[len(s)-1]) {
		return false
	}
	for i := 1; i < len(s)-1; i++ {
		c := s[i]
		if !alnum(c) && c != '-' && c != '_' && c != '.' {
			return false
		}
	}
	return true
}

// dnsSubdomain is RFC 1123: at most 253 characters, dot-separated lowercase labels that start
// and end alphanumeric with '-' inside.
func dnsSubdomain(s string) bool {
	if s == "" || len(s) > 253 {
		return false
	}
	for part := range strings.SplitSeq(s, ".") {
		if part == "" || len(part) > 63 || !lowerAlnum(part[0]) || !lowerAlnum(part[len(part)-1]) {
			return false
		}
		for i := 1; i < len(part)-1; i++ {
			if !lowerAlnum(part[i]) && part[i] != '-' {
				return false
			}
		}
	}
	return true
}

func alnum(c byte) bool {
	return lowerAlnum(c) || ('A' <= c && c <= 'Z')
}

func lowerAlnum(c byte) bool {
	return ('a' <= c && c <= 'z') || ('0' <= c && c <= '9')
}
