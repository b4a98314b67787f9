package redisstore_test

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"os"
	"strings"
	"sync"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/validmail/validmail/store"
	"github.com/validmail/validmail/store/redisstore"
)

// logBuffer is a slog destination safe for concurrent use.
type logBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *logBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

func (l *logBuffer) logger() *slog.Logger { return slog.New(slog.NewTextHandler(l, nil)) }

// TestDataLost empties the store's keys, as a Redis server restarting
// without persistence does: the store then reports store.ErrDataLost,
// where it would otherwise refuse every key as unknown.
func TestDataLost(t *testing.T) {
	ctx := context.Background()
	var logs logBuffer
	s, c, prefix := setup(t, &redisstore.Config{Logger: logs.logger()})
	if err := s.Setup(ctx); err != nil {
		t.Fatal(err)
	}
	if n, err := c.Exists(ctx, "{"+prefix+"}marker").Result(); err != nil || n != 1 {
		t.Fatalf("no marker under the prefix after Setup: %d, %v", n, err)
	}
	a, err := s.CreateAccount(ctx, store.CreateAccountParams{Email: "lost@example.com"})
	if err != nil {
		t.Fatal(err)
	}
	_, secret, err := s.CreateKey(ctx, store.CreateKeyParams{AccountID: a.ID, Name: "k"})
	if err != nil {
		t.Fatal(err)
	}
	unknown := "vm_live_" + strings.Repeat("A", 43)
	if _, err := s.Authenticate(ctx, unknown); !errors.Is(err, store.ErrInvalidKey) {
		t.Fatalf("an unknown key before the loss: %v", err)
	}
	if _, err := s.GetAccountByEmail(ctx, "nobody@example.com"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("an unknown email before the loss: %v", err)
	}
	if _, err := s.CheckHealth(ctx); err != nil {
		t.Fatalf("CheckHealth before the loss: %v", err)
	}

	// The server restarts empty.
	deleteKeys(t, c, prefix)

	if _, err := s.Authenticate(ctx, secret); !errors.Is(err, store.ErrDataLost) {
		t.Fatalf("the customer's key after the loss: %v, want ErrDataLost", err)
	}
	if _, err := s.Authenticate(ctx, unknown); !errors.Is(err, store.ErrDataLost) {
		t.Fatalf("an unknown key after the loss: %v, want ErrDataLost", err)
	}
	if _, err := s.GetAccountByEmail(ctx, "lost@example.com"); !errors.Is(err, store.ErrDataLost) {
		t.Fatalf("sign-in after the loss: %v, want ErrDataLost", err)
	}
	if _, err := s.CheckHealth(ctx); !errors.Is(err, store.ErrDataLost) {
		t.Fatalf("CheckHealth after the loss: %v, want ErrDataLost", err)
	}
	// Nobody signs up meanwhile, taking a lost customer's email and the
	// free credits on a store the operators are about to restore.
	if _, err := s.CreateAccount(ctx, store.CreateAccountParams{Email: "lost@example.com"}); !errors.Is(err, store.ErrDataLost) {
		t.Fatalf("a sign-up after the loss: %v, want ErrDataLost", err)
	}
	if got := strings.Count(logs.String(), "THE STORE LOST ITS DATA"); got != 1 {
		t.Errorf("the loss logged %d times, want once:\n%s", got, logs.String())
	}

	// A second instance starting now cannot tell a lost store from a new
	// one and writes a new marker; the first one still knows.
	s2, err := redisstore.New(c, &redisstore.Config{Prefix: prefix})
	if err != nil {
		t.Fatal(err)
	}
	if err := s2.Setup(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := s2.CheckHealth(ctx); err != nil {
		t.Fatalf("the new instance: %v", err)
	}
	if _, err := s.CheckHealth(ctx); !errors.Is(err, store.ErrDataLost) {
		t.Fatalf("the first instance after a new marker: %v, want ErrDataLost", err)
	}
	if _, err := s2.Authenticate(ctx, secret); !errors.Is(err, store.ErrInvalidKey) {
		t.Fatalf("the new instance, a key it never saw: %v", err)
	}
}

// TestPersistence reads the server's settings as the store does and
// checks what the store says of them.
func TestPersistence(t *testing.T) {
	ctx := context.Background()
	var logs logBuffer
	s, c, _ := setup(t, &redisstore.Config{Logger: logs.logger()})
	aof, err := c.ConfigGet(ctx, "appendonly").Result()
	if err != nil {
		t.Skipf("the test server refuses CONFIG GET: %v", err)
	}
	save, err := c.ConfigGet(ctx, "save").Result()
	if err != nil {
		t.Fatal(err)
	}
	durable := aof["appendonly"] == "yes" || strings.TrimSpace(save["save"]) != ""
	p, err := s.Persistence(ctx)
	if err != nil || !p.Known || p.Durable() != durable {
		t.Fatalf("Persistence = %+v, %v; the server says appendonly %q, save %q", p, err, aof["appendonly"], save["save"])
	}
	if err := s.Setup(ctx); err != nil {
		t.Fatal(err)
	}
	notes, err := s.CheckHealth(ctx)
	if err != nil {
		t.Fatal(err)
	}
	warned := strings.Contains(logs.String(), "level=WARN") && strings.Contains(logs.String(), "PERSISTENCE OFF")
	if durable == (len(notes) > 0) || durable == warned {
		t.Fatalf("durable %v: notes %q, logs:\n%s", durable, notes, logs.String())
	}
	if !durable && !strings.Contains(notes[0], "neither AOF") {
		t.Errorf("note %q", notes[0])
	}
	t.Logf("the test server: %s", p)
}

// refuseConfig makes a client's CONFIG commands fail as a managed
// server's do.
type refuseConfig struct{}

type serverError string

func (e serverError) Error() string { return string(e) }
func (serverError) RedisError()     {}

func (refuseConfig) DialHook(next redis.DialHook) redis.DialHook { return next }
func (refuseConfig) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		if cmd.Name() == "config" {
			err := serverError("ERR unknown command 'CONFIG', with args beginning with: 'GET'")
			cmd.SetErr(err)
			return err
		}
		return next(ctx, cmd)
	}
}
func (refuseConfig) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}

// TestPersistenceUnknown runs on a server that refuses CONFIG: the store
// says the persistence is unknown, once in the log and in every health
// check, and serves.
func TestPersistenceUnknown(t *testing.T) {
	ctx := context.Background()
	client(t) // skips without a server
	opt, err := redis.ParseURL(os.Getenv(envRedis))
	if err != nil {
		t.Fatal(err)
	}
	c := redis.NewClient(opt)
	defer c.Close()
	c.AddHook(refuseConfig{})
	var logs logBuffer
	_, _, prefix := setup(t, nil)
	s, err := redisstore.New(c, &redisstore.Config{Prefix: prefix, Logger: logs.logger()})
	if err != nil {
		t.Fatal(err)
	}
	p, err := s.Persistence(ctx)
	if err != nil || p.Known {
		t.Fatalf("Persistence = %+v, %v; want unknown without error", p, err)
	}
	for range 3 {
		if err := s.Setup(ctx); err != nil {
			t.Fatal(err)
		}
		notes, err := s.CheckHealth(ctx)
		if err != nil || len(notes) != 1 || !strings.Contains(notes[0], "unknown") {
			t.Fatalf("CheckHealth: %q, %v", notes, err)
		}
	}
	if n := strings.Count(logs.String(), "persistence unknown"); n != 1 {
		t.Fatalf("unknown persistence logged %d times, want once:\n%s", n, logs.String())
	}
}
