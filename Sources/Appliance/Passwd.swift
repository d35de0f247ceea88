import Access
import Basics
import Files
import System

/// `onair passwd`: adds, replaces or removes a user in `[access]` of onair.conf. A
/// viewer's password is read (twice, unshown, on a terminal; one line otherwise) and only
/// its digests are written; a device account's secret is made up and shown once. The
/// file is rewritten whole and atomically, every other line as it was.
public struct PasswdOptions: Equatable, Sendable {
    public enum Action: Equatable, Sendable { case viewer, device, remove }
    public var action: Action
    public var user: String
    /// The owner's file on the board's FAT partition, unless `--config` names another.
    public var config = "/boot/firmware/onair.conf"
}

enum Passwd {
    static let usage = """
    Usage: onair passwd USER [--config FILE]
           onair passwd --device NAME [--config FILE]
           onair passwd --remove NAME [--config FILE]

    Who may watch: with any user in [access], the viewer page, HLS, WHEP, RTSP and ONVIF
    all ask for one (the operator's server.token counts too); with none, anyone who can
    reach the board may watch.

    USER asks for a viewer's password (at least 8 characters) and writes only salted
    digests of it (HTTP and RTSP Digest, RFC 7616), never the password. ONVIF can check a
    viewer only when the NVR sends its password as PasswordText.
    --device makes an account for an NVR or a hub (Frigate, Home Assistant, an ONVIF
    recorder): onair makes up its secret, shows it once, and keeps it in the file, because
    ONVIF's PasswordDigest can only be checked with the secret itself. It is no one's own
    password and opens watching only; give it the same name and secret for ONVIF and RTSP.
    --remove takes a user out.

    FILE defaults to /boot/firmware/onair.conf (the FAT partition on the board's card);
    a running onair takes the change at its next start (systemctl restart onair).

    """

    static func parse(_ words: [String]) throws -> Invocation {
        if words.contains("--help") || words.contains("-h") { return .help(usage) }
        var action = PasswdOptions.Action.viewer
        var user: String?
        var config: String?
        var cursor = ArgumentCursor(words) { "passwd: \($0) needs a value (see 'onair passwd --help')" }
        while let word = cursor.next() {
            switch word {
            case "--device": action = .device
            case "--remove": action = .remove
            case "--config": config = try cursor.value(for: word)
            default:
                guard !word.hasPrefix("-"), user == nil else { throw ConfigError.usage("passwd: unexpected '\(word)' (see 'onair passwd --help')") }
                user = word
            }
        }
        guard let user else { throw ConfigError.usage("passwd: expected a user name (see 'onair passwd --help')") }
        guard AccessList.validName(user) else {
            throw ConfigError.usage("passwd: a user name is 1 to 32 letters, digits, '.', '_' or '-', got '\(user.prefix(40))'")
        }
        var options = PasswdOptions(action: action, user: user)
        if let config { options.config = config }
        return .passwd(options)
    }

    /// 0 when the file was written; 1 when it could not be; 2 for what was asked wrongly.
    static func run(_ options: PasswdOptions, readPassword: () throws -> String = prompt) -> Int32 {
        let path = options.config
        do {
            let text: String
            if FileSystem.exists(path) {
                let bytes = try CommandLineParser.readWholeFile(path)
                _ = try ConfigFile.parse(bytes, file: path)
                text = String(decoding: bytes, as: UTF8.self)
            } else {
                text = ""
            }
            let line: String?
            var secret: String?
            var edit = try AccessEdit(text, file: path)
            switch options.action {
            case .remove:
                line = nil
            case .viewer:
                line = "viewer = " + AccessList.viewerValue(name: options.user, password: try readPassword(), realm: edit.realm)
            case .device:
                secret = AccessList.makeSecret()
                line = "device = \(options.user) \(secret!)"
            }
            guard try edit.set(options.user, line: line) || line != nil else {
                Runner.printError("onair: passwd: \(path): no user \(options.user) in [access]")
                return 2
            }
            try BootPartition.writing(path) { try AtomicFile.write(Array(edit.text.utf8), to: path, permissions: 0o600) }
            switch options.action {
            case .remove: print("Removed \(options.user) from \(path).")
            case .viewer: print("Viewer \(options.user) set in \(path).")
            case .device:
                print("Device account \(options.user) set in \(path). Its secret, shown only now (type it into the NVR or hub, for ONVIF and RTSP):")
                print(secret!)
            }
            print("A running onair takes it at its next start (systemctl restart onair).")
            return 0
        } catch let error as ConfigError {
            Runner.printError("onair: passwd: \(error)")
            return 2
        } catch let error as PasswdError {
            Runner.printError("onair: passwd: \(error)")
            return 2
        } catch {
            Runner.printError("onair: passwd: \(path): \(error)")
            return 1
        }
    }

    /// What is wrong with a viewer's password, if anything (the settings page's rule too).
    static func problem(_ password: String) -> PasswdError? {
        guard password.count >= 8, password.count <= 128 else { return .length }
        guard password.unicodeScalars.allSatisfy({ $0.value >= 0x20 && $0.value != 0x7F }) else { return .control }
        return nil
    }

    /// The password from the terminal (twice, unshown) or one line of standard input.
    static func prompt() throws -> String {
        let input = FileDescriptor.standardInput
        let terminal = input.isTerminal
        func ask(_ question: String) throws -> String {
            if terminal { StandardError.write(question) }
            let line = try input.readLine(limit: 1024, echo: false)
            if terminal { StandardError.write("\n") }
            guard let line, let text = String(validating: line, as: UTF8.self) else { throw PasswdError.noPassword }
            return text
        }
        let password = try ask("Password: ")
        if let problem = problem(password) { throw problem }
        if terminal, try ask("Again: ") != password { throw PasswdError.mismatch }
        return password
    }
}

enum PasswdError: Error, CustomStringConvertible {
    case noPassword, length, control, mismatch
    var description: String {
        switch self {
        case .noPassword: return "no password given (a line on standard input, or typed at the prompt)"
        case .length: return "a password needs 8 to 128 characters"
        case .control: return "a password cannot hold control characters"
        case .mismatch: return "the two passwords differ; nothing was changed"
        }
    }
}

/// The `[access]` lines of a config text, edited in place: a user's line replaced or
/// removed, the realm added once (it salts every viewer's digests, so it never changes).
struct AccessEdit {
    private var edit: ConfigEdit
    let realm: String
    private let hadRealm: Bool

    init(_ text: String, file: String) throws {
        edit = ConfigEdit(text)
        let found = edit.entries.last { $0.fullKey == "access.realm" }?.value
        hadRealm = found != nil
        realm = found ?? AccessList.makeRealm()
    }

    var text: String { edit.text }

    /// Replaces `user`'s viewer or device line with `line` (nil: removes it); true when
    /// the user had one.
    mutating func set(_ user: String, line: String?) throws -> Bool {
        let mine = edit.entries.filter { entry in
            (entry.fullKey == "access.viewer" || entry.fullKey == "access.device") && entry.value.split(separator: " ").first.map(String.init) == user
        }
        edit.remove(mine.map(\.index))
        if let line { edit.add(hadRealm ? [line] : ["realm = \(realm)", line], section: "access") }
        return !mine.isEmpty
    }
}
