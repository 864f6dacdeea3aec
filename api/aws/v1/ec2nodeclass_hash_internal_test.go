package v1

import (
	"reflect"
	"slices"
	"testing"
)

// Every spec field is either hashed (mirrored in specHashInput) or ignored as Karpenter ignores it:
// a field added to EC2NodeClassSpec fails here until it is placed (and bench/upstream's property
// test generates it).
func TestEveryEC2NodeClassSpecFieldIsPlacedInTheHash(t *testing.T) {
	typ := reflect.TypeFor[EC2NodeClassSpec]()
	for i := range typ.NumField() {
		name := typ.Field(i).Name
		if !slices.Contains(hashedSpecFields, name) && !slices.Contains(ignoredSpecFields, name) {
			t.Errorf("EC2NodeClassSpec.%s is neither hashed nor ignored: add it to specHashInput (as karpenter-provider-aws hashes it) or to ignoredSpecFields", name)
		}
	}
	mirror := reflect.TypeOf(specHashInput(&EC2NodeClassSpec{}))
	var mirrored []string
	for i := range mirror.NumField() {
		mirrored = append(mirrored, mirror.Field(i).Name)
	}
	if !slices.Equal(mirrored, hashedSpecFields) {
		t.Errorf("specHashInput carries %v, hashedSpecFields says %v", mirrored, hashedSpecFields)
	}
}
