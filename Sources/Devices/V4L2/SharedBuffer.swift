import System

/// A capture buffer lent to a zero-copy consumer (the display's overlay plane): the
/// driver does not get it back until `V4L2Camera.release`.
public struct SharedBuffer: Sendable, Equatable {
    public var index: Int
    /// The camera's streaming session: a reopened camera has new buffers.
    public var generation: Int
    /// The buffer's DMABUF, owned by the camera: valid during `offer`, and until the
    /// camera is stopped or loses the device; import it (or dup it) at once.
    public var fd: FileDescriptor
    public var format: GrantedFormat
    public var frameIndex: Int64
}

public protocol SharedBufferConsumer: AnyObject, Sendable {
    /// Called on the capture thread. True: the consumer keeps the buffer and gives it back
    /// with `V4L2Camera.release`; false: the camera queues it again at once.
    func offer(_ buffer: SharedBuffer) -> Bool
}
