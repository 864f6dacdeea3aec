// Package metrics holds the loops that keep Joist's Prometheus series in step with the cluster, one
// loop per sub-package: node (allocatable, $/h, created/terminated), nodeclaim (terminated,
// disrupted), nodepool (limits, usage, $/h) and pod (startup duration). Each loop watches its objects
// and deletes an object's series when the object goes, so no series outlives what it describes.
// They run on the leader only: a standby replica exports no such series.
package metrics
