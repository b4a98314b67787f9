package dashboard_test

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"mime/multipart"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/google/uuid"

	"github.com/validmail/validmail/emailcheck"
	"github.com/validmail/validmail/emailcheck/dnstest"
	"github.com/validmail/validmail/httpapi/dashboard"
	"github.com/validmail/validmail/httpapi/service"
	"github.com/validmail/validmail/store/backend"
	"github.com/validmail/validmail/store/memstore"
	"github.com/validmail/validmail/store/storeurl"
)

// recorded is the service, without workers, behind a handler that
// records the status of every answer, as the server sent it: a client
// whose upload the server cut short may see a reset instead.
type recorded struct {
	base     string
	mu       sync.Mutex
	statuses map[int]int
}

func (s *recorded) count(status int) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.statuses[status]
}

func (s *recorded) total() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for _, c := range s.statuses {
		n += c
	}
	return n
}

type statusWriter struct {
	http.ResponseWriter
	code int
}

func (w *statusWriter) WriteHeader(code int) {
	if w.code == 0 {
		w.code = code
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusWriter) Write(b []byte) (int, error) {
	if w.code == 0 {
		w.code = http.StatusOK
	}
	return w.ResponseWriter.Write(b)
}

func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

func startRecorded(t *testing.T, b *backend.Backend) *recorded {
	t.Helper()
	dns := dnstest.Start(t, dnstest.Zone{"good.com": {MX: []dnstest.MX{{Pref: 10, Host: "mx.good.com"}}}}, nil)
	if b == nil {
		b = memstore.NewBackend()
	}
	svc, err := service.New(b, &service.Config{
		Checks:    &emailcheck.Config{Nameservers: []string{dns.Addr()}, AllowPrivateMX: true},
		Dashboard: &dashboard.Config{InsecureCookies: true, SignupsPerHour: 1000},
		Workers:   -1,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { svc.Close() })
	s := &recorded{statuses: map[int]int{}}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		sw := &statusWriter{ResponseWriter: w}
		svc.Mux().ServeHTTP(sw, r)
		s.mu.Lock()
		s.statuses[sw.code]++
		s.mu.Unlock()
	}))
	t.Cleanup(srv.Close)
	s.base = srv.URL
	return s
}

// zeros is an endless body of one repeated byte, made as it is read.
type zeros struct {
	left int64
	b    byte
}

func (z *zeros) Read(p []byte) (int, error) {
	if z.left <= 0 {
		return 0, io.EOF
	}
	n := min(int64(len(p)), z.left)
	for i := range p[:n] {
		p[i] = z.b
	}
	z.left -= n
	return int(n), nil
}

// rss returns the process's resident set size in bytes, from
// /proc/self/status, or 0 where there is none.
func rss() int64 {
	f, err := os.Open("/proc/self/status")
	if err != nil {
		return 0
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "VmRSS:"); ok {
			n, _ := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			return n << 10
		}
	}
	return 0
}

// tempFiles lists what dir holds.
func tempFiles(t *testing.T, dir string) []string {
	t.Helper()
	es, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range es {
		names = append(names, e.Name())
	}
	return names
}

// TestLargeSignInPosts sends 20 sign-in and sign-up posts of 64 MB at once,
// multipart and URL-encoded, with and without a Content-Length: each is
// refused at the limit (413, or 415 for multipart) without a temporary
// file, and the process's memory stays near where it was.
func TestLargeSignInPosts(t *testing.T) {
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	if os.TempDir() != tmp {
		t.Fatalf("os.TempDir() = %q, not TMPDIR", os.TempDir())
	}
	s := startRecorded(t, nil)
	const size = 64 << 20
	runtime.GC()
	before := rss()
	var wg sync.WaitGroup
	for i := range 20 {
		wg.Go(func() {
			path := "/dashboard/login"
			if i%4 == 3 {
				path = "/dashboard/signup"
			}
			var body io.Reader
			ct := "application/x-www-form-urlencoded"
			if i%2 == 0 {
				// A multipart body: a file part of 64 MB.
				var head bytes.Buffer
				mw := multipart.NewWriter(&head)
				mw.WriteField("email", "a@example.com")
				mw.CreateFormFile("password", "big.bin")
				tail := "\r\n--" + mw.Boundary() + "--\r\n"
				body = io.MultiReader(bytes.NewReader(head.Bytes()), &zeros{left: size, b: 'x'}, strings.NewReader(tail))
				ct = mw.FormDataContentType()
			} else {
				body = io.MultiReader(strings.NewReader("email=a%40example.com&password="), &zeros{left: size, b: 'x'})
			}
			if i%3 == 0 {
				// No Content-Length: the limit must hold while reading.
				body = io.MultiReader(body)
			}
			req, _ := http.NewRequest("POST", s.base+path, body)
			req.Header.Set("Content-Type", ct)
			if i%3 != 0 {
				req.ContentLength = size + 200
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				// The server answered and closed while the upload went on.
				return
			}
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode != http.StatusRequestEntityTooLarge && resp.StatusCode != http.StatusUnsupportedMediaType {
				t.Errorf("POST %s #%d: %d", path, i, resp.StatusCode)
			}
		})
	}
	wg.Wait()
	after := rss()
	if names := tempFiles(t, tmp); len(names) > 0 {
		t.Errorf("the temporary directory holds %v", names)
	}
	// Every request reached the handler and was refused there.
	if n := s.count(http.StatusRequestEntityTooLarge) + s.count(http.StatusUnsupportedMediaType); n != 20 || s.total() != 20 {
		t.Errorf("answers %v, want 20 refusals (413 or 415)", s.statuses)
	}
	t.Logf("RSS before %d MB, after 20 parallel 64 MB posts %d MB", before>>20, after>>20)
	// Each post is read up to the form's limit (64 KB) and no further:
	// together they hold a few MB at most, where buffering the bodies
	// would take over a GB. The bound leaves room for the runtime (and
	// the race detector's shadow memory), not for one body.
	if grew := after - before; grew > maxPostsGrowth {
		t.Errorf("RSS grew by %d MB over 20 parallel 64 MB posts, want under %d MB", grew>>20, maxPostsGrowth>>20)
	}
}

// maxPostsGrowth bounds the growth of the process's resident memory over
// TestLargeSignInPosts.
const maxPostsGrowth = 48 << 20

// TestFormLimits checks each console form's limit and encoding.
func TestFormLimits(t *testing.T) {
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	s := startRecorded(t, nil)
	u := newUser(t, s.base)
	u.signup("limits@example.com")

	post := func(path, ct string, body []byte) answer {
		t.Helper()
		req, _ := http.NewRequest("POST", s.base+path, bytes.NewReader(body))
		req.Header.Set("Content-Type", ct)
		resp, err := u.c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return answer{resp.StatusCode, resp.Header, string(b)}
	}
	multipartBody := func(fields map[string]string, file string, content []byte) ([]byte, string) {
		var buf bytes.Buffer
		mw := multipart.NewWriter(&buf)
		for k, v := range fields {
			mw.WriteField(k, v)
		}
		if file != "" {
			fw, _ := mw.CreateFormFile("file", file)
			fw.Write(content)
		}
		mw.Close()
		return buf.Bytes(), mw.FormDataContentType()
	}

	t.Run("FormOverLimit", func(t *testing.T) {
		for _, path := range []string{"/dashboard/keys", "/dashboard/webhook", "/dashboard/login", "/dashboard/signup", "/dashboard/keys/1/revoke", "/dashboard/logout"} {
			body := "name=" + strings.Repeat("a", 70<<10) + "&permissions=validate"
			a := post(path, "application/x-www-form-urlencoded", []byte(body))
			if a.code != http.StatusRequestEntityTooLarge || !strings.Contains(a.body, "larger than the 64 KB") {
				t.Errorf("POST %s of 70 KB: %d", path, a.code)
			}
		}
	})
	t.Run("MultipartOnlyForTheBulkTool", func(t *testing.T) {
		body, ct := multipartBody(map[string]string{"name": "k", "permissions": "validate"}, "", nil)
		for _, path := range []string{"/dashboard/keys", "/dashboard/login", "/dashboard/signup", "/dashboard/webhook"} {
			if a := post(path, ct, body); a.code != http.StatusUnsupportedMediaType {
				t.Errorf("multipart POST %s: %d", path, a.code)
			}
		}
		if a := post("/dashboard/keys", "text/plain", []byte("name=k")); a.code != http.StatusUnsupportedMediaType {
			t.Errorf("text/plain POST: %d", a.code)
		}
	})
	t.Run("BulkUploadLeavesNoFile", func(t *testing.T) {
		// Just under the bulk tool's limit: the standard library would
		// put this file on disk.
		var list bytes.Buffer
		for i := 0; list.Len() < 1<<20+30<<10; i++ {
			fmt.Fprintf(&list, "someone.with.a.long.name.%06d@good.com\n", i)
		}
		body, ct := multipartBody(nil, "list.txt", list.Bytes())
		a := post("/dashboard/bulk", ct, body)
		if a.code != http.StatusUnprocessableEntity || !strings.Contains(a.body, "at most 1000") {
			t.Errorf("a list of %d bytes: %d", list.Len(), a.code)
		}
		if names := tempFiles(t, tmp); len(names) > 0 {
			t.Errorf("the temporary directory holds %v", names)
		}
		body, ct = multipartBody(nil, "list.txt", bytes.Repeat([]byte("a@good.com\n"), 200_000))
		if a := post("/dashboard/bulk", ct, body); a.code != http.StatusRequestEntityTooLarge || !strings.Contains(a.body, "larger than 1 MB") {
			t.Errorf("a 2 MB file: %d", a.code)
		}
		// The same without a Content-Length: the limit holds while reading.
		req, _ := http.NewRequest("POST", s.base+"/dashboard/bulk", io.MultiReader(bytes.NewReader(body)))
		req.Header.Set("Content-Type", ct)
		if resp, err := u.c.Do(req); err == nil {
			resp.Body.Close()
			if resp.StatusCode != http.StatusRequestEntityTooLarge {
				t.Errorf("a 2 MB file, chunked: %d", resp.StatusCode)
			}
		}
		if names := tempFiles(t, tmp); len(names) > 0 {
			t.Errorf("the temporary directory holds %v", names)
		}
		body, ct = multipartBody(map[string]string{"emails": "a@good.com"}, "", nil)
		if a := post("/dashboard/bulk", ct, body); a.code != http.StatusSeeOther {
			t.Errorf("a multipart list: %d %s", a.code, a.body)
		}
	})
	t.Run("NotText", func(t *testing.T) {
		for _, c := range []struct {
			path  string
			form  url.Values
			field string
		}{
			{"/dashboard/keys", url.Values{"name": {"a\x00b"}, "permissions": {"validate"}}, "Name"},
			{"/dashboard/keys", url.Values{"name": {"ok"}, "permissions": {"validate\xff"}}, "Permissions"},
			{"/dashboard/webhook", url.Values{"url": {"https://example.com/\xff"}, "events": {"batch.completed"}}, "URL"},
			{"/dashboard/login", url.Values{"email": {"limits@example.com\x00"}, "password": {"a long enough passphrase"}}, "Email"},
			{"/dashboard/login", url.Values{"email": {"limits@example.com"}, "password": {"a long enough\xfe passphrase"}}, "Password"},
			{"/dashboard/signup", url.Values{"email": {"new\x00@example.com"}, "password": {"a long enough passphrase"}}, "Email"},
			{"/dashboard/login", url.Values{"email": {"x@example.com"}, "next": {"/dashboard/\xff"}}, "next"},
		} {
			a := u.do("POST", c.path, c.form)
			if a.code != http.StatusBadRequest || !strings.Contains(a.body, "“"+c.field+"”") {
				t.Errorf("POST %s %q: %d, want 400 naming %s\n%s", c.path, c.form.Encode(), a.code, c.field, a.body)
			}
		}
		for _, p := range []string{"/dashboard/batches?before=%ff", "/dashboard/batches/1?status=%00", "/dashboard/batches/%ff", "/dashboard/login?next=%00"} {
			if a := u.do("GET", p, nil); a.code != http.StatusBadRequest {
				t.Errorf("GET %s: %d", p, a.code)
			}
		}
	})
}

// eachBackend runs f on memory and on every shared backend the
// environment names, each under a schema or key prefix of its own.
func onEachBackend(t *testing.T, f func(t *testing.T, b *backend.Backend)) {
	t.Run("memory", func(t *testing.T) { f(t, memstore.NewBackend()) })
	for _, name := range []string{"postgres", "redis"} {
		t.Run(name, func(t *testing.T) {
			raw := os.Getenv("VALIDMAIL_TEST_" + strings.ToUpper(name))
			if raw == "" {
				t.Skipf("VALIDMAIL_TEST_%s is not set", strings.ToUpper(name))
			}
			ns := "dash_" + strings.ReplaceAll(uuid.NewString()[:8], "-", "")
			u, sep := raw, "?"
			if strings.Contains(u, "?") {
				sep = "&"
			}
			if name == "postgres" {
				u += sep + "schema=" + ns
				t.Cleanup(func() { dropSchema(t, raw, ns) })
			} else {
				u += sep + "prefix=" + ns
			}
			b, err := storeurl.Open(context.Background(), u, &storeurl.Options{Init: true})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { b.Close() })
			f(t, b)
		})
	}
}

// TestBulkUploadEncodings uploads lists as spreadsheets export them and
// lists with lines that hold no address: the addresses are submitted as
// written, and the batch page tells which lines were left out and why.
func TestBulkUploadEncodings(t *testing.T) {
	onEachBackend(t, func(t *testing.T, b *backend.Backend) {
		s := startRecorded(t, b)
		u := newUser(t, s.base)
		u.signup("encodings@example.com")
		upload := func(name string, content []byte, emails string) answer {
			t.Helper()
			var buf bytes.Buffer
			mw := multipart.NewWriter(&buf)
			mw.WriteField("emails", emails)
			if name != "" {
				fw, _ := mw.CreateFormFile("file", name)
				fw.Write(content)
			}
			mw.Close()
			req, _ := http.NewRequest("POST", s.base+"/dashboard/bulk", &buf)
			req.Header.Set("Content-Type", mw.FormDataContentType())
			resp, err := u.c.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			body, _ := io.ReadAll(resp.Body)
			return answer{resp.StatusCode, resp.Header, string(body)}
		}
		for _, c := range []struct {
			name, file string
			content    []byte
			emails     string
			want       []string // on the batch page
			report     []string
		}{
			{"Latin1CSV", "export.csv", []byte("Name,Email\nJos\xe9,jos\xe9@gmail.com\nNobody,\nZo\xeb,zo\xeb@good.com\n"), "",
				[]string{"josé@gmail.com", "zoë@good.com"}, []string{"1 line was left out", "Windows-1252", "Line 3: no address in column 2"}},
			{"UTF16CSV", "export.csv", []byte("\xff\xfee\x00m\x00a\x00i\x00l\x00\r\x00\n\x00\xe9\x00@\x00g\x00o\x00o\x00d\x00.\x00c\x00o\x00m\x00\r\x00\n\x00"), "",
				[]string{"é@good.com"}, nil},
			{"MixedLines", "list.txt", []byte("zo\xc3\xab@good.com\njos\xe9@good.com\n"), "",
				[]string{"zoë@good.com", "josé@good.com", "UTF-8 and Windows-1252"}, nil},
			{"Latin1Whole", "list.txt", []byte("jos\xe9@good.com\n"), "",
				[]string{"josé@good.com", "read as Windows-1252 text"}, nil},
			{"UTF16NoBOM", "list.txt", []byte("a\x00@\x00g\x00o\x00o\x00d\x00.\x00c\x00o\x00m\x00\n\x00"), "",
				[]string{"a@good.com", "read as UTF-16 text"}, nil},
			{"NULLineInFile", "list.txt", []byte("a@good.com\nb\x00@good.com\n"), "",
				[]string{"a@good.com"}, []string{"Line 2: holds a control character"}},
			{"NULLinePasted", "", nil, "one@good.com\ntwo\x00@good.com\nthree\xff@good.com",
				[]string{"one@good.com"}, []string{"2 lines were left out", "Line 2: holds a control character", "Line 3: holds characters that are not text"}},
		} {
			t.Run(c.name, func(t *testing.T) {
				a := upload(c.file, c.content, c.emails)
				if a.code != http.StatusSeeOther {
					t.Fatalf("upload: %d\n%s", a.code, a.body)
				}
				page := u.do("GET", strings.TrimPrefix(a.hdr.Get("Location"), s.base), nil)
				if page.code != http.StatusOK {
					t.Fatalf("batch page: %d", page.code)
				}
				for _, w := range append(c.want, c.report...) {
					if !strings.Contains(page.body, w) {
						t.Errorf("the batch page lacks %q\n%s", w, page.body)
					}
				}
				if c.report == nil && strings.Contains(page.body, "left out") {
					t.Errorf("the batch page reports skipped lines")
				}
			})
		}
		t.Run("NothingLeft", func(t *testing.T) {
			a := upload("list.txt", []byte("\x00\n\x01\n"), "")
			if a.code != http.StatusUnprocessableEntity || !strings.Contains(a.body, "Line 2: holds a control character") {
				t.Fatalf("a list of bad lines: %d\n%s", a.code, a.body)
			}
		})
	})
}
