// Package reports turns run results into what people read: the inspect
// summary of a dataset file and the end-of-run text summary.
package reports
