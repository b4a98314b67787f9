package emailcheck

import (
	"encoding/json"
	"strconv"
	"unicode/utf8"
)

// AppendJSON appends the JSON encoding of r to dst and returns the
// extended buffer: exactly the bytes json.Marshal(r) gives, without
// reflection and without allocating when dst has room. It is meant for
// servers that encode a result per request.
func (r *Result) AppendJSON(dst []byte) []byte {
	if r.SMTP != nil {
		// Probe results are rare and have many fields: left to
		// encoding/json, which cannot fail on a Result.
		b, _ := json.Marshal(r)
		return append(dst, b...)
	}
	dst = append(dst, `{"email":`...)
	dst = appendJSONString(dst, r.Email)
	v := &r.Validations
	dst = append(dst, `,"validations":{"syntax":`...)
	dst = strconv.AppendBool(dst, v.Syntax)
	dst = append(dst, `,"domain_exists":`...)
	dst = strconv.AppendBool(dst, v.DomainExists)
	dst = append(dst, `,"mx_records":`...)
	dst = strconv.AppendBool(dst, v.MXRecords)
	dst = append(dst, `,"is_disposable":`...)
	dst = strconv.AppendBool(dst, v.IsDisposable)
	c := &r.Confidence
	dst = append(dst, `},"confidence":{"confidence_score":`...)
	dst = strconv.AppendInt(dst, int64(c.Score), 10)
	dst = append(dst, `,"status":`...)
	dst = appendJSONString(dst, string(c.Status))
	dst = append(dst, `,"is_role_based":`...)
	dst = strconv.AppendBool(dst, c.IsRoleBased)
	dst = append(dst, `,"alias_status":`...)
	dst = appendJSONString(dst, string(c.AliasStatus))
	dst = append(dst, `,"canonical_email":`...)
	dst = appendJSONStringPtr(dst, c.CanonicalEmail)
	dst = append(dst, `,"equivalent_domains":`...)
	if c.EquivalentDomains == nil {
		dst = append(dst, "null"...)
	} else {
		dst = append(dst, '[')
		for i, d := range c.EquivalentDomains {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = appendJSONString(dst, d)
		}
		dst = append(dst, ']')
	}
	dst = append(dst, `},"provider":{"name":`...)
	dst = appendJSONString(dst, r.Provider.Name)
	dst = append(dst, `,"is_free":`...)
	dst = strconv.AppendBool(dst, r.Provider.IsFree)
	dst = append(dst, `},"did_you_mean":`...)
	dst = appendJSONStringPtr(dst, r.DidYouMean)
	dst = append(dst, `,"reason":`...)
	dst = appendJSONString(dst, string(r.Reason))
	dst = append(dst, `,"meta":{"latency_ms":`...)
	dst = strconv.AppendInt(dst, r.Meta.LatencyMS, 10)
	dst = append(dst, `,"source":`...)
	dst = appendJSONString(dst, r.Meta.Source)
	return append(dst, "}}"...)
}

func appendJSONStringPtr(dst []byte, s *string) []byte {
	if s == nil {
		return append(dst, "null"...)
	}
	return appendJSONString(dst, *s)
}

// appendJSONString appends s as a JSON string escaped the way
// encoding/json escapes it: quotes, backslashes and control characters,
// the HTML characters < > &, U+2028 and U+2029 escaped, and each byte of
// invalid UTF-8 replaced by U+FFFD.
func appendJSONString(dst []byte, s string) []byte {
	const hex = "0123456789abcdef"
	dst = append(dst, '"')
	start := 0
	for i := 0; i < len(s); {
		b := s[i]
		if b < utf8.RuneSelf {
			if b >= 0x20 && b != '"' && b != '\\' && b != '<' && b != '>' && b != '&' {
				i++
				continue
			}
			dst = append(dst, s[start:i]...)
			switch b {
			case '"', '\\':
				dst = append(dst, '\\', b)
			case '\b':
				dst = append(dst, '\\', 'b')
			case '\f':
				dst = append(dst, '\\', 'f')
			case '\n':
				dst = append(dst, '\\', 'n')
			case '\r':
				dst = append(dst, '\\', 'r')
			case '\t':
				dst = append(dst, '\\', 't')
			default:
				dst = append(dst, '\\', 'u', '0', '0', hex[b>>4], hex[b&0xf])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			dst = append(dst, s[start:i]...)
			dst = append(dst, `\ufffd`...)
		case r == '\u2028' || r == '\u2029':
			dst = append(dst, s[start:i]...)
			dst = append(dst, '\\', 'u', '2', '0', '2', hex[r&0xf])
		default:
			i += size
			continue
		}
		i += size
		start = i
	}
	dst = append(dst, s[start:]...)
	return append(dst, '"')
}
