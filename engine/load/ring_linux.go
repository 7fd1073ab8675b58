//go:build linux

package load

import (
	"errors"
	"fmt"
	"os"
	"sync/atomic"
	"unsafe"

	"golang.org/x/sys/unix"
)

// A minimal io_uring: the three system calls, the mmapped submission and
// completion rings and a provided-buffer ring, with only what the uring
// engine (uring_linux.go) uses. The layouts follow
// include/uapi/linux/io_uring.h.

// Opcodes.
const (
	opNop         = 0
	opPollAdd     = 6
	opAsyncCancel = 14
	opConnect     = 16
	opClose       = 19
	opSend        = 26
	opRecv        = 27
)

// SQE flags, setup flags, enter flags, features, CQE flags.
const (
	sqeBufferSelect = 1 << 5

	setupCQSize       = 1 << 3
	setupSubmitAll    = 1 << 7
	setupCoopTaskrun  = 1 << 8
	setupSingleIssuer = 1 << 12
	setupDeferTaskrun = 1 << 13

	enterGetEvents = 1 << 0
	enterExtArg    = 1 << 3

	featNoDrop = 1 << 1
	featExtArg = 1 << 8

	cqeFBuffer      = 1 << 0
	cqeFMore        = 1 << 1
	cqeBufferShift  = 16
	recvMultishot   = 1 << 1 // sqe.ioprio of a recv
	cancelFD        = 1 << 1
	cancelAll       = 1 << 0
	cancelAny       = 1 << 2
	registerProbe   = 8
	registerPbuf    = 22
	unregisterPbuf  = 23
	probeSupported  = 1
	offSQRing       = 0
	offCQRing       = 0x8000000
	offSQEs         = 0x10000000
	maxRingEntries  = 32768
	sqeSize         = 64
	cqeSize         = 16
	bufRingEntrySz  = 16
	getEventsArgLen = 24
)

type sqRingOffsets struct {
	head, tail, ringMask, ringEntries, flags, dropped, array, resv1 uint32
	userAddr                                                        uint64
}

type cqRingOffsets struct {
	head, tail, ringMask, ringEntries, overflow, cqes, flags, resv1 uint32
	userAddr                                                        uint64
}

type ringParams struct {
	sqEntries, cqEntries, flags, sqThreadCPU, sqThreadIdle, features, wqFd uint32
	resv                                                                   [3]uint32
	sqOff                                                                  sqRingOffsets
	cqOff                                                                  cqRingOffsets
}

// sqe is a submission queue entry (64 bytes).
type sqe struct {
	opcode      uint8
	flags       uint8
	ioprio      uint16
	fd          int32
	off         uint64
	addr        uint64
	len         uint32
	opFlags     uint32
	userData    uint64
	bufGroup    uint16
	personality uint16
	fileIndex   uint32
	addr3       uint64
	pad         uint64
}

// cqe is a completion queue entry (16 bytes).
type cqe struct {
	userData uint64
	res      int32
	flags    uint32
}

type bufReg struct {
	ringAddr    uint64
	ringEntries uint32
	bgid        uint16
	flags       uint16
	resv        [3]uint64
}

type getEventsArg struct {
	sigmask   uint64
	sigmaskSz uint32
	minWait   uint32
	ts        uint64
}

// ring is one io_uring instance with one provided-buffer group (group 0):
// nbuf buffers of bufSize bytes that multishot receives fill.
type ring struct {
	fd             int
	sqMem, cqMem   []byte
	sqesMem        []byte
	sqHead, sqTail *uint32
	sqMask         uint32
	sqArray        []uint32
	sqes           []sqe
	cqHead, cqTail *uint32
	cqMask         uint32
	cqes           []cqe
	pending        uint32 // SQEs filled but not yet submitted

	bufRingMem []byte // the buffer ring: nbuf io_uring_buf entries
	bufMem     []byte // the buffers themselves
	bufSize    int
	nbuf       int
	bufTail    uint16

	ts  unix.Timespec // scratch for the wait's timeout (kept off the stack)
	arg getEventsArg
}

// ringFlags are the setup flags the engine needs: completions are run
// only when the loop asks for them (DEFER_TASKRUN, which needs
// SINGLE_ISSUER: the ring is used from one locked OS thread).
const ringFlags = setupCQSize | setupSubmitAll | setupCoopTaskrun | setupSingleIssuer | setupDeferTaskrun

// newRing sets up a ring of sqEntries submissions and cqEntries
// completions with nbuf provided buffers of bufSize bytes. The calling
// goroutine must stay on its OS thread for the ring's life.
func newRing(sqEntries, cqEntries uint32, nbuf, bufSize int) (*ring, error) {
	p := ringParams{flags: ringFlags, cqEntries: cqEntries}
	fd, _, e := unix.Syscall(unix.SYS_IO_URING_SETUP, uintptr(sqEntries), uintptr(unsafe.Pointer(&p)), 0)
	if e != 0 {
		return nil, os.NewSyscallError("io_uring_setup", e)
	}
	rg := &ring{fd: int(fd)}
	if p.features&featExtArg == 0 || p.features&featNoDrop == 0 {
		rg.close()
		return nil, errors.New("io_uring: the kernel lacks timed waits (IORING_FEAT_EXT_ARG) or overflow-safe completions")
	}
	var err error
	sqLen := int(p.sqOff.array) + int(p.sqEntries)*4
	if rg.sqMem, err = unix.Mmap(rg.fd, offSQRing, sqLen, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED|unix.MAP_POPULATE); err != nil {
		rg.close()
		return nil, fmt.Errorf("io_uring: mmap of the submission ring: %w", err)
	}
	cqLen := int(p.cqOff.cqes) + int(p.cqEntries)*cqeSize
	if rg.cqMem, err = unix.Mmap(rg.fd, offCQRing, cqLen, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED|unix.MAP_POPULATE); err != nil {
		rg.close()
		return nil, fmt.Errorf("io_uring: mmap of the completion ring: %w", err)
	}
	if rg.sqesMem, err = unix.Mmap(rg.fd, offSQEs, int(p.sqEntries)*sqeSize, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED|unix.MAP_POPULATE); err != nil {
		rg.close()
		return nil, fmt.Errorf("io_uring: mmap of the submission entries: %w", err)
	}
	sq, cq := unsafe.Pointer(&rg.sqMem[0]), unsafe.Pointer(&rg.cqMem[0])
	rg.sqHead = (*uint32)(unsafe.Add(sq, p.sqOff.head))
	rg.sqTail = (*uint32)(unsafe.Add(sq, p.sqOff.tail))
	rg.sqMask = *(*uint32)(unsafe.Add(sq, p.sqOff.ringMask))
	rg.sqArray = unsafe.Slice((*uint32)(unsafe.Add(sq, p.sqOff.array)), p.sqEntries)
	rg.sqes = unsafe.Slice((*sqe)(unsafe.Pointer(&rg.sqesMem[0])), p.sqEntries)
	rg.cqHead = (*uint32)(unsafe.Add(cq, p.cqOff.head))
	rg.cqTail = (*uint32)(unsafe.Add(cq, p.cqOff.tail))
	rg.cqMask = *(*uint32)(unsafe.Add(cq, p.cqOff.ringMask))
	rg.cqes = unsafe.Slice((*cqe)(unsafe.Add(cq, p.cqOff.cqes)), p.cqEntries)
	if nbuf > 0 {
		if err := rg.setupBuffers(nbuf, bufSize); err != nil {
			rg.close()
			return nil, err
		}
	}
	return rg, nil
}

// setupBuffers registers the provided-buffer ring (IORING_REGISTER_PBUF_RING)
// and hands every buffer to the kernel. nbuf is a power of two.
func (rg *ring) setupBuffers(nbuf, bufSize int) error {
	var err error
	if rg.bufRingMem, err = unix.Mmap(-1, 0, nbuf*bufRingEntrySz, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS|unix.MAP_POPULATE); err != nil {
		return fmt.Errorf("io_uring: allocating the buffer ring: %w", err)
	}
	if rg.bufMem, err = unix.Mmap(-1, 0, nbuf*bufSize, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS); err != nil {
		return fmt.Errorf("io_uring: allocating the receive buffers: %w", err)
	}
	reg := bufReg{ringAddr: uint64(uintptr(unsafe.Pointer(&rg.bufRingMem[0]))), ringEntries: uint32(nbuf)}
	if _, _, e := unix.Syscall6(unix.SYS_IO_URING_REGISTER, uintptr(rg.fd), registerPbuf, uintptr(unsafe.Pointer(&reg)), 1, 0, 0); e != 0 {
		return os.NewSyscallError("io_uring_register(PBUF_RING)", e)
	}
	rg.bufSize, rg.nbuf = bufSize, nbuf
	for i := 0; i < nbuf; i++ {
		rg.putBuf(uint16(i))
	}
	return nil
}

// buf returns provided buffer bid.
func (rg *ring) buf(bid uint16) []byte {
	o := int(bid) * rg.bufSize
	return rg.bufMem[o : o+rg.bufSize : o+rg.bufSize]
}

// putBuf hands buffer bid back to the kernel.
func (rg *ring) putBuf(bid uint16) {
	base := unsafe.Pointer(&rg.bufRingMem[0])
	e := unsafe.Add(base, int(rg.bufTail&uint16(rg.nbuf-1))*bufRingEntrySz)
	*(*uint64)(e) = uint64(uintptr(unsafe.Pointer(&rg.bufMem[int(bid)*rg.bufSize])))
	*(*uint32)(unsafe.Add(e, 8)) = uint32(rg.bufSize)
	*(*uint16)(unsafe.Add(e, 12)) = bid
	rg.bufTail++
	// The tail overlays the reserved field of entry 0 (offset 14); the
	// store must follow the entry's (atomic stores are ordered on Go).
	atomicStore16((*uint16)(unsafe.Add(base, 14)), rg.bufTail)
}

// atomicStore16 publishes a 16-bit ring tail. Go has no 16-bit atomic
// store; the tail lives in the upper half of an aligned 32-bit word whose
// lower half (entry 0's bid) only this thread writes, so a 32-bit atomic
// store of the whole word is equivalent.
func atomicStore16(p *uint16, v uint16) {
	w := (*uint32)(unsafe.Add(unsafe.Pointer(p), -2))
	lo := *w & 0xffff
	atomic.StoreUint32(w, lo|uint32(v)<<16)
}

// get returns a cleared SQE to fill, submitting what is queued first when
// the submission ring is full.
func (rg *ring) get() (*sqe, error) {
	head := atomic.LoadUint32(rg.sqHead)
	tail := *rg.sqTail + rg.pending
	if tail-head >= uint32(len(rg.sqes)) {
		if _, err := rg.enter(0, 0, nil, false); err != nil {
			return nil, err
		}
		head = atomic.LoadUint32(rg.sqHead)
		tail = *rg.sqTail + rg.pending
		if tail-head >= uint32(len(rg.sqes)) {
			return nil, unix.EBUSY
		}
	}
	i := tail & rg.sqMask
	rg.sqArray[i] = i
	rg.pending++
	s := &rg.sqes[i]
	*s = sqe{}
	return s, nil
}

// enter submits the queued SQEs and, when wait > 0, waits until that many
// completions are ready or the timeout ts (nil: none) passes. raw waits
// without telling the Go scheduler (see ploop.rawWait); otherwise the
// wait goes through it (Syscall6). Submitting alone never blocks.
func (rg *ring) enter(wait uint32, flags uintptr, ts *unix.Timespec, raw bool) (int, error) {
	if rg.pending > 0 {
		atomic.StoreUint32(rg.sqTail, *rg.sqTail+rg.pending)
	}
	submit := rg.pending
	rg.pending = 0
	flags |= enterExtArg
	if wait > 0 {
		flags |= enterGetEvents
	}
	rg.arg = getEventsArg{}
	if ts != nil {
		rg.arg.ts = uint64(uintptr(unsafe.Pointer(ts)))
	}
	var n uintptr
	var e unix.Errno
	if wait > 0 && !raw {
		n, _, e = unix.Syscall6(unix.SYS_IO_URING_ENTER, uintptr(rg.fd), uintptr(submit), uintptr(wait), flags,
			uintptr(unsafe.Pointer(&rg.arg)), getEventsArgLen)
	} else {
		n, _, e = unix.RawSyscall6(unix.SYS_IO_URING_ENTER, uintptr(rg.fd), uintptr(submit), uintptr(wait), flags,
			uintptr(unsafe.Pointer(&rg.arg)), getEventsArgLen)
	}
	if e != 0 {
		if e == unix.ETIME || e == unix.EINTR {
			return 0, nil
		}
		return 0, e
	}
	return int(n), nil
}

// completions returns the CQE ring's ready range [head, tail).
func (rg *ring) completions() (head, tail uint32) {
	return *rg.cqHead, atomic.LoadUint32(rg.cqTail)
}

func (rg *ring) cqe(i uint32) *cqe { return &rg.cqes[i&rg.cqMask] }

// advance releases the CQEs up to head.
func (rg *ring) advance(head uint32) { atomic.StoreUint32(rg.cqHead, head) }

// close tears the ring down: closing its descriptor cancels every request
// still in flight; the buffers are unmapped afterwards.
func (rg *ring) close() {
	if rg.fd >= 0 {
		unix.Close(rg.fd)
		rg.fd = -1
	}
	for _, m := range []*[]byte{&rg.sqesMem, &rg.cqMem, &rg.sqMem, &rg.bufRingMem, &rg.bufMem} {
		if *m != nil {
			unix.Munmap(*m)
			*m = nil
		}
	}
}

// probeOps are the opcodes the engine uses.
var probeOps = []uint8{opNop, opPollAdd, opAsyncCancel, opConnect, opClose, opSend, opRecv}

// probeRing checks, once per process, that this kernel and its policy let
// the engine run: a ring with the engine's flags sets up (not refused by
// io_uring_disabled, seccomp or an old kernel), supports every opcode the
// engine uses, takes a provided-buffer ring, and completes a no-op.
func probeRing() error {
	rg, err := newRing(4, 8, 2, 4096)
	if err != nil {
		return err
	}
	defer rg.close()
	var pr struct {
		lastOp, opsLen uint8
		resv           uint16
		resv2          [3]uint32
		ops            [256]struct {
			op    uint8
			resv  uint8
			flags uint16
			resv2 uint32
		}
	}
	if _, _, e := unix.Syscall6(unix.SYS_IO_URING_REGISTER, uintptr(rg.fd), registerProbe, uintptr(unsafe.Pointer(&pr)), 256, 0, 0); e != 0 {
		return os.NewSyscallError("io_uring_register(PROBE)", e)
	}
	for _, op := range probeOps {
		if op > pr.lastOp || pr.ops[op].flags&probeSupported == 0 {
			return fmt.Errorf("io_uring: opcode %d not supported", op)
		}
	}
	s, err := rg.get()
	if err != nil {
		return err
	}
	s.opcode, s.userData = opNop, 42
	ts := unix.NsecToTimespec(int64(100e6))
	if _, err := rg.enter(1, 0, &ts, false); err != nil {
		return os.NewSyscallError("io_uring_enter", err)
	}
	head, tail := rg.completions()
	if head == tail || rg.cqe(head).userData != 42 {
		return errors.New("io_uring: a no-op did not complete")
	}
	rg.advance(head + 1)
	return nil
}
