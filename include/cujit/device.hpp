#pragma once
/// \file GPUs, streams and events. Devices are used through their primary context unless the
/// host application has made a context of that device current on the calling thread, in which
/// case cujit works in that context.

#include <cstddef>
#include <cujit/export.hpp>
#include <memory>
#include <string>

struct CUstream_st;
struct CUevent_st;
struct CUctx_st;

namespace cujit {

/// A CUDA device. Cheap to copy; properties are read once per process. Thread-safe.
class CUJIT_EXPORT Device {
 public:
  /// Number of CUDA devices; 0 when there is no driver or no device (never throws).
  static int count() noexcept;
  /// Device `id`. Throws CudaError when there is no driver, no device, or `id` is out of range.
  static Device get(int id = 0);
  /// The device of the calling thread's current context, else device 0.
  static Device current();

  /// The device's ordinal.
  int id() const noexcept { return id_; }
  /// The device's name, e.g. "NVIDIA H100 80GB HBM3".
  std::string name() const;
  /// 10 * major + minor, e.g. 90 for an H100.
  int compute_capability() const;
  /// Number of streaming multiprocessors.
  int sm_count() const;
  /// Device memory in bytes.
  std::size_t total_memory() const;
  /// L2 cache size in bytes.
  std::size_t l2_cache_size() const;
  /// The most threads a block may have.
  int max_threads_per_block() const;
  /// Free and total device memory in bytes, as cuMemGetInfo reports them now. Memory of
  /// freed arrays that cujit keeps for reuse counts as used; see release_cached_memory().
  std::pair<std::size_t, std::size_t> memory_info() const;
  /// Returns the device memory cujit keeps for reuse to the driver: the blocks of freed
  /// arrays cached per stream, then (after waiting for the device) the unused memory of the
  /// device's default memory pool, which cujit otherwise never shrinks. Afterwards
  /// memory_info() counts only live arrays, loaded kernels and other users' memory, so
  /// comparing it before and after some work shows leaks. Costs later allocations a driver
  /// call; thread-safe. Throws CudaError.
  void release_cached_memory() const;
  /// Makes this device's context (the application's, else the primary one) current.
  void make_current() const;
  /// Waits for all work on the device.
  void synchronize() const;

  /// Same device.
  friend bool operator==(const Device& a, const Device& b) { return a.id_ == b.id_; }
  /// Different devices.
  friend bool operator!=(const Device& a, const Device& b) { return a.id_ != b.id_; }

 private:
  explicit Device(int id) : id_(id) {}
  int id_;
};

/// A CUDA stream. Owns the stream it creates; wraps an application's stream without owning
/// it (Stream::wrap). Move-only. The default-constructed Stream is the legacy default stream.
/// Several threads may launch on one Stream and synchronize it at once (the driver runs the
/// work in the order the calls reach it, so launches from different threads interleave in no
/// set order); moving, assigning or destroying it needs exclusive access and must wait until
/// other threads are done with it. Destroying a Stream returns the memory cujit cached for
/// it to the device's pool.
class CUJIT_EXPORT Stream {
 public:
  /// The legacy default stream (CUstream 0); never destroyed.
  Stream() noexcept = default;
  /// Creates a new (blocking) stream on `device`.
  explicit Stream(const Device& device);
  /// Wraps a stream the application owns; cujit never destroys it. The application may
  /// destroy it at any time after its last use by cujit: memory cujit cached for it is never
  /// handed to another stream (not even a new one at the same address) and is returned to
  /// the pool when memory runs short. Arrays allocated on it should go before it does (an
  /// array freed once cujit's cache is full is freed in the stream's order).
  static Stream wrap(CUstream_st* stream, const Device& device) noexcept;
  /// Moves the stream (and its ownership) out of `other`.
  Stream(Stream&& other) noexcept = default;
  /// Destroys an owned stream, then takes `other`'s.
  Stream& operator=(Stream&& other) noexcept = default;
  Stream(const Stream&) = delete;
  Stream& operator=(const Stream&) = delete;
  ~Stream() = default;

  /// The driver's CUstream (null for the legacy default stream).
  CUstream_st* handle() const noexcept { return owned_ ? owned_.get() : borrowed_; }
  /// The stream's device; -1 for the legacy default stream (the device current at use).
  int device_id() const noexcept { return device_; }
  /// Waits until all work on the stream has finished.
  void synchronize() const;

 private:
  struct Release {
    void operator()(CUstream_st* stream) const noexcept;
  };
  std::unique_ptr<CUstream_st, Release> owned_;  // a stream cujit created
  CUstream_st* borrowed_ = nullptr;              // a stream the application owns
  int device_ = -1;                              // -1: the device current at use
};

/// A CUDA event for ordering and timing. Move-only. record() and wait_on() from several
/// threads are safe but race in the order they reach the driver; moving or destroying it
/// needs exclusive access.
class CUJIT_EXPORT Event {
 public:
  /// Creates an event on `device` (timing enabled).
  explicit Event(const Device& device = Device::current());
  /// Moves the event out of `other`.
  Event(Event&& other) noexcept = default;
  /// Destroys this event, then takes `other`'s.
  Event& operator=(Event&& other) noexcept = default;
  Event(const Event&) = delete;
  Event& operator=(const Event&) = delete;
  ~Event() = default;

  /// Records the event on `stream` (a default Stream(): the event's device's default stream).
  void record(const Stream& stream = Stream()) const;
  /// Waits until the work recorded before the event has finished.
  void synchronize() const;
  /// Makes `stream` wait for this event.
  void wait_on(const Stream& stream) const;
  /// Milliseconds between `start` and this event (both recorded and complete).
  [[nodiscard]] float elapsed_since(const Event& start) const;
  /// The driver's CUevent.
  CUevent_st* handle() const noexcept { return event_.get(); }

 private:
  struct Release {
    void operator()(CUevent_st* event) const noexcept;
  };
  std::unique_ptr<CUevent_st, Release> event_;
  int device_ = -1;  // the device it was created on
};

}  // namespace cujit
