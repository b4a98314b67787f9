package dashboard

import (
	"errors"
	"maps"
	"mime"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Body limits of the console's POST routes.
const (
	// maxFormBody bounds the body of every form but the bulk tool's: a
	// sign-in, a key name or a webhook URL fits many times over.
	maxFormBody = 64 << 10
	// maxBulkBody bounds the bulk tool's body: a file of maxUpload bytes
	// and the multipart framing and text field around it.
	maxBulkBody = maxUpload + 64<<10
)

// Content types the console's forms are sent in.
const (
	formURLEncoded = "application/x-www-form-urlencoded"
	formMultipart  = "multipart/form-data"
)

// listFields are the fields read line by line, whose lines are checked
// (and reported) one at a time rather than refused as a whole.
var listFields = []string{"emails"}

// bounded checks what a request brings before a handler sees it: a POST
// body is read under a limit (maxBulkBody for the bulk tool's route,
// maxFormBody elsewhere) and in a form encoding the route takes, multipart
// only where a file is expected; every path, query and form value must be
// UTF-8 text without NUL, so nothing else reaches a store. A form parsed
// here is not parsed again by the handler. Multipart temporary files are
// removed when the handler returns: the request here is the session
// middleware's copy, whose form the server's own clean-up never sees.
func (d *Dashboard) bounded(next http.Handler) http.Handler {
	bulk, listUpload := d.path("/bulk"), d.path("/bulk/list")
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		defer func() {
			if r.MultipartForm != nil {
				r.MultipartForm.RemoveAll()
			}
		}()
		if !utf8.ValidString(r.URL.Path) || strings.IndexByte(r.URL.Path, 0) >= 0 {
			d.fail(w, r, http.StatusBadRequest, "The address of this page holds characters that are not text.")
			return
		}
		if r.Method != http.MethodPost {
			// Only the query: a GET body is never read.
			q, err := url.ParseQuery(r.URL.RawQuery)
			if err != nil {
				d.fail(w, r, http.StatusBadRequest, "The address of this page could not be read.")
				return
			}
			if field, ok := textValues(q, nil); !ok {
				d.refuseField(w, r, field)
				return
			}
			next.ServeHTTP(w, r)
			return
		}
		if r.URL.Path == listUpload {
			// A list of any size: streamed by its handler, never parsed
			// here (see uploadList).
			if ct, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type")); ct != formMultipart {
				w.Header().Set("Accept-Post", formMultipart)
				d.fail(w, r, http.StatusUnsupportedMediaType, "This form must be sent as an ordinary web form, with its file.")
				return
			}
			next.ServeHTTP(w, r)
			return
		}
		limit, multipartOK := int64(maxFormBody), false
		if r.URL.Path == bulk {
			limit, multipartOK = maxBulkBody, true
		}
		if r.ContentLength > limit {
			d.tooLarge(w, r, limit)
			return
		}
		ct, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type"))
		switch {
		case ct == formURLEncoded:
		case ct == formMultipart && multipartOK:
		case ct == "" && r.ContentLength == 0:
			// A bodiless POST: sign out, rotate, test.
		default:
			w.Header().Set("Accept-Post", formURLEncoded)
			if multipartOK {
				w.Header().Set("Accept-Post", formURLEncoded+", "+formMultipart)
			}
			d.fail(w, r, http.StatusUnsupportedMediaType, "This form must be sent as an ordinary web form.")
			return
		}
		r.Body = http.MaxBytesReader(w, r.Body, limit)
		var err error
		if ct == formMultipart {
			// The whole body fits in memory under the limit, so no part
			// is written to a temporary file.
			err = r.ParseMultipartForm(limit)
		} else {
			err = r.ParseForm()
		}
		if err != nil {
			if _, ok := errors.AsType[*http.MaxBytesError](err); ok {
				d.tooLarge(w, r, limit)
				return
			}
			d.fail(w, r, http.StatusBadRequest, "The form could not be read.")
			return
		}
		// r.Form holds the query, the body's fields and a multipart
		// form's text parts.
		if field, ok := textValues(r.Form, listFields); !ok {
			d.refuseField(w, r, field)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// textValues reports whether every key and value of form is text: valid
// UTF-8 without NUL. The fields named in skip are left to their handler;
// field is the first one that is not text.
func textValues(form map[string][]string, skip []string) (field string, ok bool) {
	for _, k := range slices.Sorted(maps.Keys(form)) {
		if !isText(k) {
			return "", false
		}
		if slices.Contains(skip, k) {
			continue
		}
		for _, v := range form[k] {
			if !isText(v) {
				return k, false
			}
		}
	}
	return "", true
}

// isText reports whether s is valid UTF-8 without NUL.
func isText(s string) bool {
	return utf8.ValidString(s) && strings.IndexByte(s, 0) < 0
}

// fieldLabels name the console's form fields as the forms label them.
var fieldLabels = map[string]string{
	"email":       "Email",
	"password":    "Password",
	"name":        "Name",
	"permissions": "Permissions",
	"url":         "URL",
	"events":      "Events",
	"enabled":     "Enabled",
	"emails":      "Addresses",
	"next":        "next",
}

// refuseField answers 400 naming the field that is not text.
func (d *Dashboard) refuseField(w http.ResponseWriter, r *http.Request, field string) {
	msg := "The form holds a field name that is not text (a NUL character or bytes that are not UTF-8). Nothing was changed."
	if field != "" {
		label := fieldLabels[field]
		if label == "" {
			label = field
		}
		msg = "The field “" + label + "” holds characters that are not text (a NUL character or bytes that are not UTF-8). Nothing was changed; retype it and send the form again."
	}
	d.fail(w, r, http.StatusBadRequest, msg)
}

// tooLarge answers 413 for a body over limit. The rest of the body is
// not read: the server closes the connection after the answer.
func (d *Dashboard) tooLarge(w http.ResponseWriter, r *http.Request, limit int64) {
	w.Header().Set("Connection", "close")
	msg := "This form is larger than the " + strconv.FormatInt(limit>>10, 10) + " KB we accept. Nothing was changed."
	if limit == maxBulkBody {
		msg = "The file is larger than 1 MB. Split the list and upload the parts one after another."
	}
	d.fail(w, r, http.StatusRequestEntityTooLarge, msg)
}
