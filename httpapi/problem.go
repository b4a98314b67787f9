package httpapi

import (
	"encoding/json"
	"net/http"
	"strconv"
)

// Code is the machine-readable code of an error response; it is the
// "code" member of the problem document and ends its "type" URI.
type Code string

// Error codes, with the HTTP status each is sent with.
const (
	CodeMissingEmail         Code = "missing_email"          // 400
	CodeInvalidJSON          Code = "invalid_json"           // 400
	CodeInvalidBody          Code = "invalid_body"           // 400
	CodeEmptyBatch           Code = "empty_batch"            // 400
	CodeBatchTooLarge        Code = "batch_too_large"        // 400
	CodeAddressTooLong       Code = "address_too_long"       // 400
	CodeNoEmailColumn        Code = "no_email_column"        // 400
	CodeTooManyRows          Code = "too_many_rows"          // 400
	CodeInvalidList          Code = "invalid_list"           // 400
	CodeUnknownPack          Code = "unknown_pack"           // 400
	CodeInvalidSignature     Code = "invalid_signature"      // 400
	CodeUnknownPlan          Code = "unknown_plan"           // 400
	CodeMissingAPIKey        Code = "missing_api_key"        // 401
	CodeInvalidAPIKey        Code = "invalid_api_key"        // 401
	CodeInsufficientCredits  Code = "insufficient_credits"   // 402
	CodePermissionDenied     Code = "permission_denied"      // 403
	CodeEmailUnconfirmed     Code = "email_unconfirmed"      // 403
	CodeJobNotFound          Code = "job_not_found"          // 404
	CodeBatchNotFound        Code = "batch_not_found"        // 404
	CodeNotFound             Code = "not_found"              // 404
	CodeMethodNotAllowed     Code = "method_not_allowed"     // 405
	CodeBodyTooLarge         Code = "body_too_large"         // 413
	CodeUnsupportedMediaType Code = "unsupported_media_type" // 415
	CodeIdempotencyKeyReused Code = "idempotency_key_reused" // 422
	CodeKeyLimitReached      Code = "key_limit_reached"      // 409
	CodeConfirmationRequired Code = "confirmation_required"  // 409
	CodeRateLimited          Code = "rate_limited"           // 429
	CodeInternal             Code = "internal"               // 500
	CodeUnavailable          Code = "unavailable"            // 503
	CodeRequestTimeout       Code = "request_timeout"        // 408
)

// ProblemTypePrefix starts the "type" URI of every problem document; the
// code follows it.
const ProblemTypePrefix = "urn:validmail:problem:"

type codeInfo struct {
	status int
	title  string
}

var codes = map[Code]codeInfo{
	CodeMissingEmail:         {http.StatusBadRequest, "Missing email"},
	CodeInvalidJSON:          {http.StatusBadRequest, "Invalid JSON"},
	CodeInvalidBody:          {http.StatusBadRequest, "Invalid request body"},
	CodeEmptyBatch:           {http.StatusBadRequest, "Empty batch"},
	CodeBatchTooLarge:        {http.StatusBadRequest, "Batch too large"},
	CodeAddressTooLong:       {http.StatusBadRequest, "Address too long"},
	CodeNoEmailColumn:        {http.StatusBadRequest, "No address column"},
	CodeTooManyRows:          {http.StatusBadRequest, "Too many rows"},
	CodeInvalidList:          {http.StatusBadRequest, "Invalid list"},
	CodeUnknownPack:          {http.StatusBadRequest, "Unknown credit pack"},
	CodeInvalidSignature:     {http.StatusBadRequest, "Invalid signature"},
	CodeUnknownPlan:          {http.StatusBadRequest, "Unknown plan"},
	CodeMissingAPIKey:        {http.StatusUnauthorized, "Missing API key"},
	CodeInvalidAPIKey:        {http.StatusUnauthorized, "Invalid API key"},
	CodeInsufficientCredits:  {http.StatusPaymentRequired, "Insufficient credits"},
	CodePermissionDenied:     {http.StatusForbidden, "Permission denied"},
	CodeEmailUnconfirmed:     {http.StatusForbidden, "Email unconfirmed"},
	CodeJobNotFound:          {http.StatusNotFound, "Job not found"},
	CodeBatchNotFound:        {http.StatusNotFound, "Batch not found"},
	CodeNotFound:             {http.StatusNotFound, "Not found"},
	CodeMethodNotAllowed:     {http.StatusMethodNotAllowed, "Method not allowed"},
	CodeBodyTooLarge:         {http.StatusRequestEntityTooLarge, "Request body too large"},
	CodeUnsupportedMediaType: {http.StatusUnsupportedMediaType, "Unsupported media type"},
	CodeIdempotencyKeyReused: {http.StatusUnprocessableEntity, "Idempotency key reused"},
	CodeKeyLimitReached:      {http.StatusConflict, "Key limit reached"},
	CodeConfirmationRequired: {http.StatusConflict, "Confirmation required"},
	CodeRateLimited:          {http.StatusTooManyRequests, "Rate limited"},
	CodeInternal:             {http.StatusInternalServerError, "Internal error"},
	CodeUnavailable:          {http.StatusServiceUnavailable, "Service unavailable"},
	CodeRequestTimeout:       {http.StatusRequestTimeout, "Request timeout"},
}

// Status returns the HTTP status code c is sent with (500 for an unknown
// code).
func (c Code) Status() int {
	if info, ok := codes[c]; ok {
		return info.status
	}
	return http.StatusInternalServerError
}

// problem is an RFC 9457 problem document with the API's extension
// members.
type problem struct {
	Type       string `json:"type"`
	Title      string `json:"title"`
	Status     int    `json:"status"`
	Detail     string `json:"detail"`
	Code       Code   `json:"code"`
	RequestID  string `json:"requestId"`
	Balance    *int64 `json:"balance,omitempty"`
	Required   *int64 `json:"required,omitempty"`
	Permission string `json:"permission,omitempty"`
}

// writeProblem sends a problem document for code.
func writeProblem(w http.ResponseWriter, c *call, code Code, detail string) {
	writeProblemDoc(w, c, problem{Code: code, Detail: detail})
}

func writeProblemDoc(w http.ResponseWriter, c *call, p problem) {
	info, ok := codes[p.Code]
	if !ok {
		p.Code, info = CodeInternal, codes[CodeInternal]
	}
	p.Type = ProblemTypePrefix + string(p.Code)
	p.Title = info.title
	p.Status = info.status
	p.RequestID = c.id
	c.code = p.Code
	body, err := json.Marshal(p)
	if err != nil { // cannot happen: every field is a plain value
		body = []byte(`{"code":"internal"}`)
	}
	body = append(body, '\n')
	h := w.Header()
	h.Set("Content-Type", "application/problem+json")
	h.Set("Content-Length", strconv.Itoa(len(body)))
	h.Set("Cache-Control", "no-store")
	w.WriteHeader(info.status)
	w.Write(body)
}
