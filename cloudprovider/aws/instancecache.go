package aws

import (
	"context"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	"golang.org/x/sync/singleflight"
	"k8s.io/utils/clock"

	awsv1 "github.com/joist-dev/joist/api/aws/v1"
)

// instanceCache is every instance tagged for the cluster, read with one paginated
// DescribeInstances at most once per TTL however many callers ask (drift every few seconds per
// node, garbage collection, Get): the account's describe budget is shared by everything in it, and
// one call per node per check exhausts it at a few hundred nodes. Concurrent refreshes share one
// call; no lock is held while it runs. A failed refresh keeps serving the last answer.
type instanceCache struct {
	ec2     *ec2.Client
	cluster string
	clock   clock.PassiveClock
	ttl     time.Duration

	refresh singleflight.Group
	mu      sync.RWMutex
	byID    map[string]ec2types.Instance
	fetched time.Time
	retryAt time.Time // after a failed refresh, the last answer is served until then
}

// all returns the cluster's instances by id, refreshed once older than the TTL.
func (c *instanceCache) all(ctx context.Context, describe func(context.Context, *ec2.DescribeInstancesInput) ([]ec2types.Instance, error)) (map[string]ec2types.Instance, error) {
	c.mu.RLock()
	byID, fetched, retryAt := c.byID, c.fetched, c.retryAt
	c.mu.RUnlock()
	if byID != nil && (c.clock.Since(fetched) < c.ttl || c.clock.Now().Before(retryAt)) {
		return byID, nil
	}
	v, err, _ := c.refresh.Do("all", func() (any, error) {
		insts, err := describe(ctx, &ec2.DescribeInstancesInput{Filters: []ec2types.Filter{
			{Name: aws.String("tag:" + awsv1.ClusterTagKeyPrefix + c.cluster), Values: []string{"owned"}},
		}})
		if err != nil {
			c.mu.Lock()
			c.retryAt = c.clock.Now().Add(c.ttl / 3)
			c.mu.Unlock()
			return nil, err
		}
		m := make(map[string]ec2types.Instance, len(insts))
		for _, inst := range insts {
			m[aws.ToString(inst.InstanceId)] = inst
		}
		c.mu.Lock()
		c.byID, c.fetched = m, c.clock.Now()
		c.mu.Unlock()
		return m, nil
	})
	if err != nil {
		if byID != nil {
			return byID, nil // stale beats nothing: the next call tries again
		}
		return nil, err
	}
	return v.(map[string]ec2types.Instance), nil
}

// lookup returns the cached instance with the id, if the cache holds it.
func (c *instanceCache) lookup(ctx context.Context, id string, describe func(context.Context, *ec2.DescribeInstancesInput) ([]ec2types.Instance, error)) (*ec2types.Instance, bool) {
	byID, err := c.all(ctx, describe)
	if err != nil {
		return nil, false
	}
	inst, ok := byID[id]
	return &inst, ok
}

// forget drops an instance from the cache (Joist just terminated it): the next Get describes it.
func (c *instanceCache) forget(id string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.byID[id]; !ok {
		return
	}
	m := make(map[string]ec2types.Instance, len(c.byID)) // readers hold the old map: copy on write
	for k, v := range c.byID {
		if k != id {
			m[k] = v
		}
	}
	c.byID = m
}
