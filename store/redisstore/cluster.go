package redisstore

import (
	"context"
	"errors"
	"net"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// Defaults [NewClusterClient] applies to options left zero.
const (
	// ClusterReloadInterval bounds how stale the client's map of slots to
	// masters may get without an error to reveal it.
	ClusterReloadInterval = 2 * time.Second
	// ClusterMaxRedirects is how many MOVED, ASK and retryable replies
	// one command may follow: enough to ride out a failover whose new
	// master is announced while the command is in flight.
	ClusterMaxRedirects = 8
	// ClusterDialTimeout bounds one attempt to connect to a node: a
	// master that is down costs the calls that meet it at most this long
	// (a refused connection, far less), not go-redis's 5 s.
	ClusterDialTimeout = time.Second
	// ClusterDialAttempts is how many times one connection to a node is
	// tried before the call fails: once, as the redirects that follow
	// (each reloading the map of slots) are the retries, rather than
	// go-redis's 5 attempts 100 ms apart on every redirect.
	ClusterDialAttempts = 1
)

// NewClusterClient returns a go-redis cluster client over opts that
// follows failovers quickly: it reloads the map of slots every
// [ClusterReloadInterval] unless opts sets ClusterStateReloadInterval,
// follows up to [ClusterMaxRedirects] redirects unless opts sets
// MaxRedirects, gives up connecting to a node after [ClusterDialTimeout]
// and [ClusterDialAttempts] unless opts sets DialTimeout or
// DialerRetries, reads from masters only (ReadOnly off), and reloads the map
// at once when a command finds a node unreachable or the cluster down
// ([FollowFailover]). opts is not modified.
func NewClusterClient(opts *redis.ClusterOptions) *redis.ClusterClient {
	o := *opts
	if o.ClusterStateReloadInterval <= 0 {
		o.ClusterStateReloadInterval = ClusterReloadInterval
	}
	if o.MaxRedirects == 0 {
		o.MaxRedirects = ClusterMaxRedirects
	}
	if o.DialTimeout == 0 {
		o.DialTimeout = ClusterDialTimeout
	}
	if o.DialerRetries == 0 {
		o.DialerRetries = ClusterDialAttempts
	}
	o.ReadOnly, o.RouteByLatency, o.RouteRandomly = false, false, false
	c := redis.NewClusterClient(&o)
	FollowFailover(c)
	return c
}

// FollowFailover makes c reload its map of slots to masters as soon as a
// command fails on an unreachable node (a refused or broken connection, a
// timeout) or on a reply that says the cluster is changing (CLUSTERDOWN,
// TRYAGAIN, MASTERDOWN, LOADING, READONLY). go-redis reloads on MOVED and
// ASK by itself, but keeps sending to a dead master until its periodic
// reload; with this hook the commands after a failover go to the replica
// that took over as soon as the cluster has promoted it.
func FollowFailover(c *redis.ClusterClient) {
	c.AddHook(failoverHook{c: c})
}

// failoverHook is the hook of [FollowFailover].
type failoverHook struct{ c *redis.ClusterClient }

func (h failoverHook) DialHook(next redis.DialHook) redis.DialHook {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		conn, err := next(ctx, network, addr)
		if err != nil && ctx.Err() == nil {
			h.c.ReloadState(ctx)
		}
		return conn, err
	}
}

func (h failoverHook) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		err := next(ctx, cmd)
		if topologyChanged(ctx, err) {
			h.c.ReloadState(ctx)
		}
		return err
	}
}

func (h failoverHook) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		err := next(ctx, cmds)
		if topologyChanged(ctx, err) {
			h.c.ReloadState(ctx)
		}
		return err
	}
}

// topologyChanged reports whether err, from a command on a cluster, may
// mean that a master moved: a failure to reach the node, or a reply that
// says the cluster is changing.
func topologyChanged(ctx context.Context, err error) bool {
	if err == nil || errors.Is(err, redis.Nil) || ctx.Err() != nil {
		return false
	}
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return false
	}
	var re redis.Error
	if errors.As(err, &re) {
		return clusterTransient(re)
	}
	return true
}

// clusterTransient reports whether a server reply is one a cluster sends
// while slots move or a master fails over: the command reached the wrong
// or an unready node, not bad data.
func clusterTransient(re redis.Error) bool {
	msg := re.Error()
	for _, p := range []string{"MOVED ", "ASK ", "TRYAGAIN", "CLUSTERDOWN", "MASTERDOWN", "LOADING", "READONLY"} {
		if strings.HasPrefix(msg, p) {
			return true
		}
	}
	return false
}
