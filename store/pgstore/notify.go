package pgstore

import (
	"context"
	"crypto/md5"
	"encoding/hex"
	"time"

	"github.com/jackc/pgx/v5"
)

// listener is the goroutine that LISTENs for new jobs on behalf of every
// subscription of a Store. It runs while there is at least one.
type listener struct {
	cancel context.CancelFunc
	ready  chan struct{} // closed after the first attempt to listen
	err    error         // that attempt's error, readable once ready is closed
}

// Subscribe implements [jobsdriver.Notifier]. The first subscription takes a
// connection out of the pool for LISTEN (the pool may open another in its
// place); it is given back, closed, when the last subscription ends. When
// the connection fails it is replaced, and every subscriber is signalled
// once, since notifications may have been missed meanwhile. Subscribe
// returns once notifications are flowing, or the error of the first attempt
// to listen.
func (s *jobsDriver) Subscribe(ctx context.Context) (<-chan struct{}, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	ch := make(chan struct{}, 1)
	s.mu.Lock()
	s.subs[ch] = struct{}{}
	l := s.listener
	if l == nil {
		lctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
		l = &listener{cancel: cancel, ready: make(chan struct{})}
		s.listener = l
		go s.listen(lctx, l)
	}
	s.mu.Unlock()

	select {
	case <-l.ready:
		if l.err != nil {
			s.unsubscribe(ch)
			return nil, l.err
		}
	case <-ctx.Done():
		s.unsubscribe(ch)
		return nil, ctx.Err()
	}
	context.AfterFunc(ctx, func() { s.unsubscribe(ch) })
	return ch, nil
}

func (s *Store) unsubscribe(ch chan struct{}) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.subs, ch)
	if len(s.subs) == 0 && s.listener != nil {
		s.listener.cancel()
		s.listener = nil
	}
}

// broadcast signals every subscriber without blocking.
func (s *Store) broadcast() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for ch := range s.subs {
		select {
		case ch <- struct{}{}:
		default:
		}
	}
}

// Reconnection waits of the listener.
const (
	listenRetryMin = 50 * time.Millisecond
	listenRetryMax = 5 * time.Second
)

// listen keeps a LISTEN connection open until ctx ends.
func (s *Store) listen(ctx context.Context, l *listener) {
	wait := listenRetryMin
	for attempt := 0; ; attempt++ {
		conn, err := s.listenConn(ctx)
		if attempt == 0 {
			l.err = err
			close(l.ready)
			if err != nil {
				s.mu.Lock()
				if s.listener == l {
					s.listener = nil
				}
				s.mu.Unlock()
				l.cancel()
				return
			}
		}
		if err == nil {
			if attempt > 0 {
				s.logger.InfoContext(ctx, "pgstore: listening for jobs again")
				s.broadcast()
			}
			wait = listenRetryMin
			for {
				if _, err = conn.WaitForNotification(ctx); err != nil {
					break
				}
				s.broadcast()
			}
			closeCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Second)
			_ = conn.Close(closeCtx)
			cancel()
		}
		if ctx.Err() != nil {
			return
		}
		s.logger.WarnContext(ctx, "pgstore: job notifications interrupted; reconnecting", "err", err, "retry_in", wait)
		select {
		case <-ctx.Done():
			return
		case <-time.After(wait):
		}
		wait = min(2*wait, listenRetryMax)
	}
}

// listenConn takes a connection out of the pool and LISTENs on it.
func (s *Store) listenConn(ctx context.Context) (*pgx.Conn, error) {
	pc, err := s.pool.Acquire(ctx)
	if err != nil {
		return nil, fail(ctx, "listen", err)
	}
	conn := pc.Hijack()
	if _, err := conn.Exec(ctx, "LISTEN "+pgx.Identifier{s.channel()}.Sanitize()); err != nil {
		_ = conn.Close(context.WithoutCancel(ctx))
		return nil, fail(ctx, "listen", err)
	}
	return conn, nil
}

func md5hex(s string) string {
	sum := md5.Sum([]byte(s))
	return hex.EncodeToString(sum[:])
}
