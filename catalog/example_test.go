package catalog_test

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"

	"github.com/joist-dev/joist/catalog"
)

// Parse a catalog and read an instance type's allocatable resources and cheapest offering.
func ExampleParse() {
	its, err := catalog.Parse([]byte(`
instanceTypes:
- name: c-4x-amd64-linux
  capacity: {cpu: "4", memory: 8Gi, pods: "110"}
  overhead: {cpu: 80m, memory: 600Mi}
  labels: {kubernetes.io/arch: amd64}
  offerings:
  - {zone: test-zone-a, capacityType: spot, price: 0.0612}
  - {zone: test-zone-a, capacityType: on-demand, price: 0.17}
`))
	if err != nil {
		fmt.Println(err)
		return
	}
	it := its[0]
	alloc := it.Allocatable()
	cpu, mem := alloc[corev1.ResourceCPU], alloc[corev1.ResourceMemory]
	fmt.Println(it.Name, cpu.String(), mem.String(), it.Labels["kubernetes.io/os"])
	fmt.Println(it.Offerings[0].CapacityType, it.Offerings[0].Price, it.Offerings[0].Available)
	// Output:
	// c-4x-amd64-linux 3920m 7592Mi linux
	// spot 0.0612 true
}

// Parse reports every problem, naming the entry and the field.
func ExampleParse_errors() {
	_, err := catalog.Parse([]byte(`
instanceTypes:
- name: small
  capacity: {cpu: 2, memory: 4GB}
  offerings: [{zone: test-zone-a, capacityType: Spot, price: 0.02}]
`))
	fmt.Println(err)
	// Output:
	// instanceTypes[0] "small": capacity.memory "4GB" is not a quantity; write e.g. "4", 500m, 8Gi
	// instanceTypes[0] "small": offerings[0].capacityType "Spot" is not one of spot, on-demand, reserved; use one of those (lowercase)
}

// Default is the embedded generated catalog that `joist simulate` uses without --catalog.
func ExampleDefault() {
	its := catalog.Default()
	for _, it := range its {
		if it.Name == "m-16x-arm64-linux" {
			alloc := it.Allocatable()
			cpu, pods := alloc[corev1.ResourceCPU], alloc[corev1.ResourcePods]
			fmt.Println(len(its), it.Name, cpu.String(), pods.String(), it.Labels[catalog.LabelInstanceFamily])
		}
	}
	// Output: 69 m-16x-arm64-linux 15890m 250 m
}
