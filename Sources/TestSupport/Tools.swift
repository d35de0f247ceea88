import Foundation

/// Runs a command-line tool (ffmpeg, ffprobe) to its end: its standard output and exit
/// status, so a test checks onair's output through another program's eyes.
public func toolOutput(_ executable: String, _ arguments: [String]) throws -> (status: Int32, stdout: Data) {
    let process = Process()
    process.executableURL = URL(fileURLWithPath: executable)
    process.arguments = arguments
    let pipe = Pipe()
    process.standardOutput = pipe
    try process.run()
    let output = pipe.fileHandleForReading.readDataToEndOfFile()
    process.waitUntilExit()
    return (process.terminationStatus, output)
}
