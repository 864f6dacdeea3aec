package aws

import (
	"context"
	"fmt"
	"sort"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	awsv1 "github.com/joist-dev/joist/api/aws/v1"
	v1 "github.com/joist-dev/joist/api/v1"
	"github.com/joist-dev/joist/cloudprovider"
)

// liveStates are the states of an instance that still exists for Joist.
var liveStates = []string{"pending", "running", "stopping", "stopped"}

// instanceOfClaim finds the live instance tagged for the claim, if any.
func (p *CloudProvider) instanceOfClaim(ctx context.Context, claim string) (*ec2types.Instance, error) {
	insts, err := p.describe(ctx, &ec2.DescribeInstancesInput{Filters: []ec2types.Filter{
		{Name: aws.String("tag:" + awsv1.NodeClaimTagKey), Values: []string{claim}},
		{Name: aws.String("tag:" + awsv1.ClusterTagKeyPrefix + p.opts.ClusterName), Values: []string{"owned"}},
		{Name: aws.String("instance-state-name"), Values: liveStates},
	}})
	if err != nil || len(insts) == 0 {
		return nil, err
	}
	return &insts[0], nil
}

func (p *CloudProvider) describe(ctx context.Context, in *ec2.DescribeInstancesInput) ([]ec2types.Instance, error) {
	var out []ec2types.Instance
	pages := ec2.NewDescribeInstancesPaginator(p.clients.EC2, in)
	for pages.HasMorePages() {
		page, err := pages.NextPage(ctx)
		if err != nil {
			return nil, fmt.Errorf("describing instances: %w", err)
		}
		for _, r := range page.Reservations {
			out = append(out, r.Instances...)
		}
	}
	return out, nil
}

// claimFromInstance describes an instance launched for a claim (for an idempotent Create).
func (p *CloudProvider) claimFromInstance(ctx context.Context, nc *awsv1.EC2NodeClass, inst *ec2types.Instance) (*v1.NodeClaim, error) {
	its, err := p.instanceTypes(ctx, nc)
	if err != nil {
		return nil, err
	}
	claim := instanceClaim(inst)
	return p.launchedClaim(nc, claim, its, aws.ToString(inst.InstanceId), string(inst.InstanceType), zoneOf(inst), claim.Labels[v1.CapacityTypeLabelKey])
}

// instanceClaim describes a running instance as a NodeClaim named after its karpenter.sh/nodeclaim tag.
func instanceClaim(inst *ec2types.Instance) *v1.NodeClaim {
	tags := map[string]string{}
	for _, t := range inst.Tags {
		tags[aws.ToString(t.Key)] = aws.ToString(t.Value)
	}
	capacityType := v1.CapacityTypeOnDemand
	if inst.InstanceLifecycle == ec2types.InstanceLifecycleTypeSpot {
		capacityType = v1.CapacityTypeSpot
	}
	claim := &v1.NodeClaim{ObjectMeta: metav1.ObjectMeta{
		Name:              tags[awsv1.NodeClaimTagKey],
		CreationTimestamp: metav1.NewTime(aws.ToTime(inst.LaunchTime)),
		Labels: map[string]string{
			v1.LabelInstanceType: string(inst.InstanceType), v1.LabelTopologyZone: zoneOf(inst),
			v1.CapacityTypeLabelKey: capacityType, v1.NodePoolLabelKey: tags[awsv1.NodePoolTagKey],
		},
	}}
	claim.Status.ProviderID = providerID(zoneOf(inst), aws.ToString(inst.InstanceId))
	claim.Status.ImageID = aws.ToString(inst.ImageId)
	return claim
}

func zoneOf(inst *ec2types.Instance) string {
	if inst.Placement == nil {
		return ""
	}
	return aws.ToString(inst.Placement.AvailabilityZone)
}

// Get returns the live instance with the provider ID.
func (p *CloudProvider) Get(ctx context.Context, providerID string) (*v1.NodeClaim, error) {
	inst, err := p.cachedInstance(ctx, providerID)
	if err != nil {
		return nil, err
	}
	return instanceClaim(inst), nil
}

// cachedInstance answers from the cluster's instance cache; an instance the cache does not hold
// (launched since, or not tagged for the cluster) is described by id.
func (p *CloudProvider) cachedInstance(ctx context.Context, providerID string) (*ec2types.Instance, error) {
	id, err := instanceID(providerID)
	if err != nil {
		return nil, cloudprovider.NewNodeClaimNotFoundError(err)
	}
	inst, ok := p.instances.lookup(ctx, id, p.describe)
	if !ok {
		return p.instance(ctx, providerID)
	}
	if state := inst.State; state != nil && (state.Name == ec2types.InstanceStateNameTerminated || state.Name == ec2types.InstanceStateNameShuttingDown) {
		return nil, cloudprovider.NewNodeClaimNotFoundError(fmt.Errorf("instance %s is %s", id, state.Name))
	}
	return inst, nil
}

// instance describes one instance; a missing, shutting-down or terminated one is NotFound.
func (p *CloudProvider) instance(ctx context.Context, providerID string) (*ec2types.Instance, error) {
	id, err := instanceID(providerID)
	if err != nil {
		return nil, cloudprovider.NewNodeClaimNotFoundError(err)
	}
	insts, err := p.describe(ctx, &ec2.DescribeInstancesInput{InstanceIds: []string{id}})
	if isNotFound(err) || (err == nil && len(insts) == 0) {
		return nil, cloudprovider.NewNodeClaimNotFoundError(fmt.Errorf("instance %s", id))
	}
	if err != nil {
		return nil, err
	}
	if state := insts[0].State; state != nil && (state.Name == ec2types.InstanceStateNameTerminated || state.Name == ec2types.InstanceStateNameShuttingDown) {
		return nil, cloudprovider.NewNodeClaimNotFoundError(fmt.Errorf("instance %s is %s", id, state.Name))
	}
	return &insts[0], nil
}

// List returns every live instance tagged for this cluster and a NodePool (from the instance cache).
func (p *CloudProvider) List(ctx context.Context) ([]*v1.NodeClaim, error) {
	byID, err := p.instances.all(ctx, p.describe)
	if err != nil {
		return nil, err
	}
	ids := make([]string, 0, len(byID))
	for id := range byID {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	out := make([]*v1.NodeClaim, 0, len(byID))
	for _, id := range ids {
		inst := byID[id]
		if inst.State == nil || !contains(liveStates, string(inst.State.Name)) || !hasTag(&inst, awsv1.NodePoolTagKey) {
			continue
		}
		out = append(out, instanceClaim(&inst))
	}
	return out, nil
}

func hasTag(inst *ec2types.Instance, key string) bool {
	for _, t := range inst.Tags {
		if aws.ToString(t.Key) == key {
			return true
		}
	}
	return false
}

// Delete terminates the claim's instance (found by provider ID, or by its claim tag when the launch
// was never recorded). It returns NotFound once the instance is shutting down or gone.
func (p *CloudProvider) Delete(ctx context.Context, claim *v1.NodeClaim) error {
	var inst *ec2types.Instance
	var err error
	if claim.Status.ProviderID != "" {
		inst, err = p.instance(ctx, claim.Status.ProviderID)
	} else {
		inst, err = p.instanceOfClaim(ctx, claim.Name)
		if err == nil && inst == nil {
			err = cloudprovider.NewNodeClaimNotFoundError(fmt.Errorf("no instance tagged for nodeclaim %s", claim.Name))
		}
	}
	if err != nil {
		return err
	}
	id := aws.ToString(inst.InstanceId)
	if err := p.terminator.terminate(ctx, id); err != nil {
		return err
	}
	p.instances.forget(id)
	return nil
}

// terminator batches TerminateInstances: calls within a short window share one request.
type terminator struct {
	ec2    *ec2.Client
	window time.Duration

	mu      sync.Mutex
	pending map[string][]chan error
}

func newTerminator(c *ec2.Client) *terminator {
	return &terminator{ec2: c, window: 100 * time.Millisecond, pending: map[string][]chan error{}}
}

// maxTerminateBatch is TerminateInstances' limit on instance ids per call.
const maxTerminateBatch = 500

func (t *terminator) terminate(ctx context.Context, id string) error {
	done := make(chan error, 1)
	t.mu.Lock()
	if len(t.pending) == 0 {
		time.AfterFunc(t.window, t.flush)
	}
	t.pending[id] = append(t.pending[id], done)
	t.mu.Unlock()
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (t *terminator) flush() {
	t.mu.Lock()
	batch := t.pending
	t.pending = map[string][]chan error{}
	t.mu.Unlock()
	ids := make([]string, 0, len(batch))
	for id := range batch {
		ids = append(ids, id)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for start := 0; start < len(ids); start += maxTerminateBatch {
		chunk := ids[start:min(start+maxTerminateBatch, len(ids))]
		_, err := t.ec2.TerminateInstances(ctx, &ec2.TerminateInstancesInput{InstanceIds: chunk})
		if err != nil && len(chunk) > 1 {
			// One bad id fails the whole call: fall back to one call each.
			for _, id := range chunk {
				_, err := t.ec2.TerminateInstances(ctx, &ec2.TerminateInstancesInput{InstanceIds: []string{id}})
				t.answer(batch[id], id, err)
			}
			continue
		}
		for _, id := range chunk {
			t.answer(batch[id], id, err)
		}
	}
}

func (t *terminator) answer(waiters []chan error, id string, err error) {
	if isNotFound(err) {
		err = cloudprovider.NewNodeClaimNotFoundError(fmt.Errorf("instance %s", id))
	} else if err != nil {
		err = fmt.Errorf("terminating instance %s: %w", id, err)
	}
	for _, w := range waiters {
		w <- err
	}
}
