package main

import (
	"math/rand/v2"
)

// Model is a linear regression y = W·x + B: small enough to send every
// step, real enough that its loss falls and its resumption shows.
type Model struct {
	W []float64 `json:"w"`
	B float64   `json:"b"`
}

// Features is the input size.
const Features = 8

// truth is the model the synthetic data comes from.
func truth() Model {
	m := Model{W: make([]float64, Features), B: 0.5}
	for i := range m.W {
		m.W[i] = float64(i+1) / Features
	}
	return m
}

// Shard is a worker's part of the synthetic data set: n samples from a
// generator seeded by its global rank, so a restarted worker trains on the
// same data as before.
func Shard(rank, n int) (xs [][]float64, ys []float64) {
	r := rand.New(rand.NewPCG(uint64(rank), 42))
	t := truth()
	for range n {
		x := make([]float64, Features)
		for i := range x {
			x[i] = r.NormFloat64()
		}
		xs = append(xs, x)
		ys = append(ys, t.Predict(x)+0.01*r.NormFloat64())
	}
	return xs, ys
}

// Predict is W·x + B.
func (m Model) Predict(x []float64) float64 {
	y := m.B
	for i, w := range m.W {
		y += w * x[i]
	}
	return y
}

// Gradient is the mean squared error's gradient over a shard, followed by
// the loss itself: one vector, reduced as one.
func (m Model) Gradient(xs [][]float64, ys []float64) []float64 {
	g := make([]float64, Features+2) // W..., B, loss
	for i, x := range xs {
		err := m.Predict(x) - ys[i]
		for j := range m.W {
			g[j] += 2 * err * x[j]
		}
		g[Features] += 2 * err
		g[Features+1] += err * err
	}
	for j := range g {
		g[j] /= float64(len(xs))
	}
	return g
}

// Step applies the mean of every worker's gradient (summed, of workers)
// and returns the mean loss before it.
func (m *Model) Step(sum []float64, workers int, rate float64) (loss float64) {
	for j := range m.W {
		m.W[j] -= rate * sum[j] / float64(workers)
	}
	m.B -= rate * sum[Features] / float64(workers)
	return sum[Features+1] / float64(workers)
}

// NewModel is the untrained model.
func NewModel() Model { return Model{W: make([]float64, Features)} }
