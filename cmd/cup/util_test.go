package main

import (
	cupv1alpha1 "github.com/cup-dev/cup/gen/cup/v1alpha1"
)

// testDefs is a Flag definition in each group.
func testDefs(groups ...string) []*cupv1alpha1.ResourceDefinition {
	var out []*cupv1alpha1.ResourceDefinition
	for _, g := range groups {
		out = append(out, &cupv1alpha1.ResourceDefinition{
			Name:     "flags." + g,
			Group:    g,
			Names:    &cupv1alpha1.Names{Kind: "Flag", Singular: "flag", Plural: "flags", ShortNames: []string{"fl"}},
			Versions: []*cupv1alpha1.DefinitionVersion{{Name: "v1"}},
		})
	}
	return out
}
