package main

import "github.com/spf13/cobra"

func newGenPoolCmd(g *globals) *cobra.Command {
	return &cobra.Command{Use: "gen-pool", Hidden: true, RunE: func(*cobra.Command, []string) error { return nil }}
}
