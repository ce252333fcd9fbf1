// Package e2e holds end-to-end scenarios against real services started by hack/.
package e2e
