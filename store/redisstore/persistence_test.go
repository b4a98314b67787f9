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

	"github.com/google/uuid"
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

	// A second instance starting now, as a restart of the service does,
	// refuses the store too: a missing marker is not taken for a new
	// deployment unless the operator says so.
	s2, err := redisstore.New(c, &redisstore.Config{Prefix: prefix})
	if err != nil {
		t.Fatal(err)
	}
	if err := s2.Setup(ctx); !errors.Is(err, store.ErrDataLost) {
		t.Fatalf("a new instance's Setup after the loss: %v, want ErrDataLost", err)
	}
	if _, err := s2.CheckHealth(ctx); !errors.Is(err, store.ErrDataLost) {
		t.Fatalf("a new instance's health after the loss: %v, want ErrDataLost", err)
	}
	if _, err := s2.Authenticate(ctx, secret); !errors.Is(err, store.ErrDataLost) {
		t.Fatalf("a new instance, the lost key: %v, want ErrDataLost", err)
	}
	if _, err := s2.CreateAccount(ctx, store.CreateAccountParams{Email: "lost@example.com"}); !errors.Is(err, store.ErrDataLost) {
		t.Fatalf("a new instance, a sign-up: %v, want ErrDataLost", err)
	}
	if n, err := c.Exists(ctx, "{"+prefix+"}marker").Result(); err != nil || n != 0 {
		t.Fatalf("a new instance wrote a marker: %d, %v", n, err)
	}

	// The operator accepts the loss and initialises the store again: the
	// first instance still knows its marker is not the one it saw.
	s3, err := redisstore.New(c, &redisstore.Config{Prefix: prefix})
	if err != nil {
		t.Fatal(err)
	}
	if err := s3.Init(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := s3.CheckHealth(ctx); err != nil {
		t.Fatalf("the initialised instance: %v", err)
	}
	if _, err := s.CheckHealth(ctx); !errors.Is(err, store.ErrDataLost) {
		t.Fatalf("the first instance after a new marker: %v, want ErrDataLost", err)
	}
	if _, err := s3.Authenticate(ctx, secret); !errors.Is(err, store.ErrInvalidKey) {
		t.Fatalf("the initialised instance, a key it never saw: %v", err)
	}
}

// TestStoreInit checks the store's start on a prefix without a marker:
// refused without Init, and served after the data come back; and that
// Init leaves an initialised store's marker alone.
func TestStoreInit(t *testing.T) {
	ctx := context.Background()
	var logs logBuffer
	c := client(t)
	prefix := "vmtest-" + uuid.NewString()
	t.Cleanup(func() { deleteKeys(t, c, prefix) })
	s, err := redisstore.New(c, &redisstore.Config{Prefix: prefix, Logger: logs.logger()})
	if err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if err := s.Setup(ctx); !errors.Is(err, store.ErrDataLost) {
			t.Fatalf("Setup without a marker: %v, want ErrDataLost", err)
		}
	}
	if err := s.Setup(ctx); !strings.Contains(err.Error(), "-store-init") {
		t.Errorf("the error does not say how to initialise a new store: %v", err)
	}
	if got := strings.Count(logs.String(), "NO MARKER KEY"); got != 1 {
		t.Errorf("the missing marker logged %d times, want once:\n%s", got, logs.String())
	}
	if _, err := s.GetAccountByEmail(ctx, "a@example.com"); !errors.Is(err, store.ErrDataLost) {
		t.Fatalf("a sign-in: %v, want ErrDataLost", err)
	}
	if keys := scanPrefix(t, c, prefix); len(keys) != 0 {
		t.Fatalf("the refused store wrote %q", keys)
	}

	// Another instance initialises it; the first then serves, with the
	// marker the other wrote.
	other, err := redisstore.New(c, &redisstore.Config{Prefix: prefix, Init: true})
	if err != nil {
		t.Fatal(err)
	}
	if err := other.Setup(ctx); err != nil {
		t.Fatal(err)
	}
	marker, err := c.Get(ctx, "{"+prefix+"}marker").Result()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.CheckHealth(ctx); err != nil {
		t.Fatalf("after the store was initialised: %v", err)
	}
	again, err := redisstore.New(c, &redisstore.Config{Prefix: prefix, Logger: logs.logger()})
	if err != nil {
		t.Fatal(err)
	}
	if err := again.Init(ctx); err != nil {
		t.Fatal(err)
	}
	if now, err := c.Get(ctx, "{"+prefix+"}marker").Result(); err != nil || now != marker {
		t.Fatalf("Init on an initialised store changed the marker: %q, %v; was %q", now, err, marker)
	}
	if !strings.Contains(logs.String(), "initialised already") {
		t.Errorf("Init on an initialised store logged no warning:\n%s", logs.String())
	}
}

// scanPrefix returns the keys under prefix.
func scanPrefix(t *testing.T, c *redis.Client, prefix string) []string {
	t.Helper()
	ctx := context.Background()
	var keys []string
	iter := c.Scan(ctx, 0, "{"+prefix+"[}:]*", 10000).Iterator()
	for iter.Next(ctx) {
		keys = append(keys, iter.Val())
	}
	if err := iter.Err(); err != nil {
		t.Fatal(err)
	}
	return keys
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
	s, err := redisstore.New(c, &redisstore.Config{Prefix: prefix, Logger: logs.logger(), Init: true})
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
