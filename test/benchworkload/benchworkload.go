// Package benchworkload is the workload of `make bench-e2e` (test/benche2e): its five Deployments,
// 1,000 pods in all. test/benche2e creates them; the planner-only replay of its scale-down
// (controllers/disruption's TestScaleDownOnThePlannerEndsNearThePlan) plans the same pods, so the
// two cannot drift apart. Data only: it imports nothing of the project.
package benchworkload

// Deployment is one of the bench's Deployments: its replicas and each pod's requests.
type Deployment struct {
	Replicas    int32
	CPU, Memory string
}

// Sizes are the five Deployments (1,000 pods in all), named bench-0 … bench-4 in this order.
var Sizes = []Deployment{
	{400, "100m", "128Mi"}, {300, "250m", "512Mi"}, {150, "500m", "1Gi"}, {100, "1", "2Gi"}, {50, "2", "4Gi"},
}

// InstanceFamilies are the instance families the bench's NodePool allows
// (joist.dev/instance-family).
var InstanceFamilies = []string{"c", "m", "r"}
