package service_test

import (
	"context"
	"encoding/csv"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/validmail/validmail/httpapi/service"
)

// BenchmarkListUpload sends a list of VALIDMAIL_LIST_ROWS rows (default
// 1,000,000; 10 % duplicates, 1 % junk) through POST /api/v1/lists on
// memory and every backend the environment names, with a validator that
// answers at once, and measures the upload (the 202) and the time to the
// last result, with the peak heap in use. Run it once:
//
//	go test -run XXX -bench ListUpload -benchtime 1x ./httpapi/service/
func BenchmarkListUpload(b *testing.B) {
	n := 1_000_000
	if s := os.Getenv("VALIDMAIL_LIST_ROWS"); s != "" {
		n, _ = strconv.Atoi(s)
	}
	for _, tg := range listTargets() {
		b.Run(tg.name, func(b *testing.B) {
			for b.Loop() {
				b.StopTimer()
				ctx := context.Background()
				be := openTarget(b, tg)
				svc, err := service.New(be, &service.Config{Validator: instant{}, Workers: 32})
				if err != nil {
					b.Fatal(err)
				}
				_, key, err := service.Bootstrap(ctx, be.Accounts, service.BootstrapParams{Email: "bench@example.org", Credits: int64(n)})
				if err != nil {
					b.Fatal(err)
				}
				ln, err := net.Listen("tcp", "127.0.0.1:0")
				if err != nil {
					b.Fatal(err)
				}
				sctx, stop := context.WithCancel(ctx)
				served := make(chan error, 1)
				go func() { served <- svc.Serve(sctx, ln) }()
				base := "http://" + ln.Addr().String()
				before := heapNow()
				peak := heapPeak()
				b.StartTimer()
				start := time.Now()
				pr, pw := io.Pipe()
				go func() {
					cw := csv.NewWriter(pw)
					cw.Write([]string{"email", "name", "note"})
					for i := range n {
						rec, _, _ := listRow(i)
						cw.Write(rec)
					}
					cw.Flush()
					pw.CloseWithError(cw.Error())
				}()
				req, _ := http.NewRequest("POST", base+"/api/v1/lists?name=bench.csv", pr)
				req.Header.Set("x-api-key", key)
				req.Header.Set("Content-Type", "text/csv")
				resp, err := http.DefaultClient.Do(req)
				if err != nil {
					b.Fatal(err)
				}
				body, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				if resp.StatusCode != http.StatusAccepted {
					b.Fatalf("POST: %d %s", resp.StatusCode, body)
				}
				accepted := time.Since(start)
				var got struct {
					BatchID   string `json:"batch_id"`
					Addresses int    `json:"addresses"`
				}
				json.Unmarshal(body, &got)
				for {
					req, _ := http.NewRequest("GET", base+"/api/v1/batches/"+got.BatchID, nil)
					req.Header.Set("x-api-key", key)
					resp, err := http.DefaultClient.Do(req)
					if err != nil {
						b.Fatal(err)
					}
					bb, _ := io.ReadAll(resp.Body)
					resp.Body.Close()
					if strings.Contains(string(bb), `"state":"completed"`) {
						break
					}
					time.Sleep(100 * time.Millisecond)
				}
				done := time.Since(start)
				b.StopTimer()
				top := peak()
				b.ReportMetric(accepted.Seconds(), "s-to-202")
				b.ReportMetric(done.Seconds(), "s-to-last-result")
				b.ReportMetric(float64(n)/done.Seconds(), "rows/s")
				b.ReportMetric(float64(got.Addresses)/(done-accepted).Seconds(), "jobs/s-drain")
				b.ReportMetric((float64(top)-float64(before))/(1<<20), "MiB-heap-peak")
				stop()
				<-served
				svc.Close()
				b.StartTimer()
			}
		})
	}
}
