package cloudsim

import (
	"context"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"sync"
	"time"

	"k8s.io/utils/clock"
)

// core is what every part of the simulator shares: the clock, the logger, the random source of IDs, the knobs
// and the faults, each behind a lock of its own, so that no service waits on another's lock for them.
type core struct {
	clock clock.Clock
	log   *slog.Logger

	rmu sync.Mutex // guards rng and src
	rng *rand.Rand
	src rand.Source

	kmu   sync.RWMutex // guards knobs
	knobs Knobs

	fmu    sync.Mutex // guards faults
	faults []*Fault
}

// knob returns the current knobs.
func (c *core) knob() Knobs {
	c.kmu.RLock()
	defer c.kmu.RUnlock()
	return c.knobs
}

// sleep waits d on the simulator's clock, or until ctx ends.
func (c *core) sleep(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return nil
	}
	select {
	case <-c.clock.After(d):
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// random returns the next 64 random bits of the simulator's source.
func (c *core) random() uint64 {
	c.rmu.Lock()
	defer c.rmu.Unlock()
	return c.rng.Uint64()
}

// newUUID returns a random UUID (version 4).
func (c *core) newUUID() string {
	var b [16]byte
	binary.BigEndian.PutUint64(b[:8], c.random())
	binary.BigEndian.PutUint64(b[8:], c.random())
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	h := hex.EncodeToString(b[:])
	return h[:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:]
}

// newHex returns n random bytes in hex.
func (c *core) newHex(n int) string {
	b := make([]byte, 0, n+8)
	for len(b) < n {
		b = binary.BigEndian.AppendUint64(b, c.random())
	}
	return hex.EncodeToString(b[:n])
}

// newMAC returns an OpenStack-style MAC address.
func (c *core) newMAC() string {
	v := c.random()
	return fmt.Sprintf("fa:16:3e:%02x:%02x:%02x", byte(v), byte(v>>8), byte(v>>16))
}

// now is the simulator's time, truncated to microseconds like the services' databases.
func (c *core) now() time.Time { return c.clock.Now().UTC().Truncate(time.Microsecond) }
