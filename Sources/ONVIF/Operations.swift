import Basics
import Media

/// The operations the two services answer (ONVIF Device Management and Media WSDLs,
/// ver10), each as its response element; nil for any other, which is answered with
/// ActionNotSupported. Every value is the board's own; text is escaped.
extension ONVIFService {
    func deviceOperation(_ name: String, _ operation: XMLElement, address: Address) -> String? {
        let e = SOAP.escape
        switch name {
        case "GetDeviceInformation":
            return "<tds:GetDeviceInformationResponse><tds:Manufacturer>\(e(device.manufacturer))</tds:Manufacturer>"
                + "<tds:Model>\(e(device.hardware))</tds:Model><tds:FirmwareVersion>\(e(device.firmware))</tds:FirmwareVersion>"
                + "<tds:SerialNumber>\(e(device.serial))</tds:SerialNumber><tds:HardwareId>\(e(device.hardware))</tds:HardwareId>"
                + "</tds:GetDeviceInformationResponse>"
        case "GetCapabilities":
            return capabilities(operation, address: address)
        case "GetServices":
            let services = [(Self.deviceNamespace, Self.devicePath), (Self.mediaNamespace, Self.mediaPath)].map { namespace, path in
                "<tds:Service><tds:Namespace>\(namespace)</tds:Namespace><tds:XAddr>\(address.http)\(path)</tds:XAddr>"
                    + "<tds:Version><tt:Major>2</tt:Major><tt:Minor>0</tt:Minor></tds:Version></tds:Service>"
            }
            return "<tds:GetServicesResponse>\(services.joined())</tds:GetServicesResponse>"
        case "GetSystemDateAndTime":
            let clock = environment.clock()
            let t = UTCDate.components(milliseconds: clock.unixMilliseconds)
            return "<tds:GetSystemDateAndTimeResponse><tds:SystemDateAndTime><tt:DateTimeType>\(clock.synchronized ? "NTP" : "Manual")</tt:DateTimeType>"
                + "<tt:DaylightSavings>false</tt:DaylightSavings><tt:TimeZone><tt:TZ>UTC0</tt:TZ></tt:TimeZone>"
                + "<tt:UTCDateTime><tt:Time><tt:Hour>\(t.hour)</tt:Hour><tt:Minute>\(t.minute)</tt:Minute><tt:Second>\(t.second)</tt:Second></tt:Time>"
                + "<tt:Date><tt:Year>\(t.year)</tt:Year><tt:Month>\(t.month)</tt:Month><tt:Day>\(t.day)</tt:Day></tt:Date></tt:UTCDateTime>"
                + "</tds:SystemDateAndTime></tds:GetSystemDateAndTimeResponse>"
        case "GetServiceCapabilities":
            return "<tds:GetServiceCapabilitiesResponse><tds:Capabilities>"
                + "<tds:Network IPFilter=\"false\" ZeroConfiguration=\"false\" IPVersion6=\"false\" DynDNS=\"false\"/>"
                + "<tds:Security UsernameToken=\"true\" HttpDigest=\"false\"/>"
                + "<tds:System DiscoveryResolve=\"false\" DiscoveryBye=\"true\" RemoteDiscovery=\"false\" SystemBackup=\"false\" "
                + "SystemLogging=\"false\" FirmwareUpgrade=\"false\"/></tds:Capabilities></tds:GetServiceCapabilitiesResponse>"
        case "GetHostname":
            return "<tds:GetHostnameResponse><tds:HostnameInformation><tt:FromDHCP>false</tt:FromDHCP>"
                + "<tt:Name>\(e(device.name))</tt:Name></tds:HostnameInformation></tds:GetHostnameResponse>"
        case "GetScopes":
            let scopes = device.scopes.map { "<tds:Scopes><tt:ScopeDef>Fixed</tt:ScopeDef><tt:ScopeItem>\(e($0))</tt:ScopeItem></tds:Scopes>" }
            return "<tds:GetScopesResponse>\(scopes.joined())</tds:GetScopesResponse>"
        case "GetNetworkInterfaces":
            return networkInterfaces()
        default:
            return nil
        }
    }

    /// GetCapabilities: the device's and the media service's, or the one Category asks.
    private func capabilities(_ operation: XMLElement, address: Address) -> String? {
        let device = "<tt:Device><tt:XAddr>\(address.http)\(Self.devicePath)</tt:XAddr>"
            + "<tt:Network><tt:IPFilter>false</tt:IPFilter><tt:ZeroConfiguration>false</tt:ZeroConfiguration>"
            + "<tt:IPVersion6>false</tt:IPVersion6><tt:DynDNS>false</tt:DynDNS></tt:Network>"
            + "<tt:System><tt:DiscoveryResolve>false</tt:DiscoveryResolve><tt:DiscoveryBye>true</tt:DiscoveryBye>"
            + "<tt:RemoteDiscovery>false</tt:RemoteDiscovery><tt:SystemBackup>false</tt:SystemBackup><tt:SystemLogging>false</tt:SystemLogging>"
            + "<tt:FirmwareUpgrade>false</tt:FirmwareUpgrade><tt:SupportedVersions><tt:Major>2</tt:Major><tt:Minor>0</tt:Minor></tt:SupportedVersions>"
            + "</tt:System></tt:Device>"
        let media = "<tt:Media><tt:XAddr>\(address.http)\(Self.mediaPath)</tt:XAddr><tt:StreamingCapabilities>"
            + "<tt:RTPMulticast>false</tt:RTPMulticast><tt:RTP_TCP>\(address.rtspPort != nil)</tt:RTP_TCP>"
            + "<tt:RTP_RTSP_TCP>\(address.rtspPort != nil)</tt:RTP_RTSP_TCP></tt:StreamingCapabilities></tt:Media>"
        // Category narrows the answer (tt:CapabilityCategory); All, or none, is both.
        let category = operation.children.filter { $0.name == "Category" }.map(\.text)
        let wanted = category.isEmpty || category.contains("All")
        let parts = (wanted || category.contains("Device") ? device : "") + (wanted || category.contains("Media") ? media : "")
        guard !parts.isEmpty else { return nil }
        return "<tds:GetCapabilitiesResponse><tds:Capabilities>\(parts)</tds:Capabilities></tds:GetCapabilitiesResponse>"
    }

    /// GetNetworkInterfaces: each interface with its IPv4 addresses, as DHCP gave them or not.
    private func networkInterfaces() -> String {
        let e = SOAP.escape
        let interfaces = environment.interfaces().map { interface in
            let addresses = interface.ipv4.map { "<tt:Address>\($0.address)</tt:Address><tt:PrefixLength>\($0.prefixLength)</tt:PrefixLength>" }
            let config = interface.ipv4.isEmpty ? "" : "<tt:IPv4><tt:Enabled>true</tt:Enabled><tt:Config>"
                + addresses.map { interface.dhcp ? "<tt:FromDHCP>\($0)</tt:FromDHCP>" : "<tt:Manual>\($0)</tt:Manual>" }.joined()
                + "<tt:DHCP>\(interface.dhcp)</tt:DHCP></tt:Config></tt:IPv4>"
            return "<tds:NetworkInterfaces token=\"\(e(interface.name))\"><tt:Enabled>true</tt:Enabled><tt:Info><tt:Name>\(e(interface.name))</tt:Name>"
                + "<tt:HwAddress>\(e(interface.hardwareAddress))</tt:HwAddress><tt:MTU>\(interface.mtu)</tt:MTU></tt:Info>\(config)</tds:NetworkInterfaces>"
        }
        return "<tds:GetNetworkInterfacesResponse>\(interfaces.joined())</tds:GetNetworkInterfacesResponse>"
    }

    /// The one profile's token: the live stream.
    static let profileToken = "live"

    func mediaOperation(_ name: String, _ operation: XMLElement, address: Address) -> String? {
        switch name {
        case "GetProfiles":
            return "<trt:GetProfilesResponse>\(profile("trt:Profiles"))</trt:GetProfilesResponse>"
        case "GetProfile":
            return "<trt:GetProfileResponse>\(profile("trt:Profile"))</trt:GetProfileResponse>"
        case "GetServiceCapabilities":
            // SnapshotUri: Home Assistant and others ask before they use GetSnapshotUri.
            let rtsp = address.rtspPort != nil
            return "<trt:GetServiceCapabilitiesResponse><trt:Capabilities SnapshotUri=\"\(environment.snapshotPath != nil)\" Rotation=\"false\" "
                + "VideoSourceMode=\"false\" OSD=\"false\"><trt:ProfileCapabilities MaximumNumberOfProfiles=\"1\"/>"
                + "<trt:StreamingCapabilities RTPMulticast=\"false\" RTP_TCP=\"\(rtsp)\" RTP_RTSP_TCP=\"\(rtsp)\"/></trt:Capabilities>"
                + "</trt:GetServiceCapabilitiesResponse>"
        case "GetVideoSources":
            let live = environment.live()
            let resolution = live.map { "<tt:Framerate>\($0.fps)</tt:Framerate><tt:Resolution><tt:Width>\($0.width)</tt:Width><tt:Height>\($0.height)</tt:Height></tt:Resolution>" } ?? ""
            return "<trt:GetVideoSourcesResponse><trt:VideoSources token=\"camera\">\(resolution)</trt:VideoSources></trt:GetVideoSourcesResponse>"
        case "GetStreamUri":
            guard let port = address.rtspPort else { return nil }
            return "<trt:GetStreamUriResponse>\(Self.mediaURI("rtsp://\(address.host):\(port)/live"))</trt:GetStreamUriResponse>"
        case "GetSnapshotUri":
            guard let path = environment.snapshotPath else { return nil }
            return "<trt:GetSnapshotUriResponse>\(Self.mediaURI(address.http + path))</trt:GetSnapshotUriResponse>"
        default:
            return nil
        }
    }

    static func mediaURI(_ uri: String) -> String {
        "<trt:MediaUri><tt:Uri>\(SOAP.escape(uri))</tt:Uri><tt:InvalidAfterConnect>false</tt:InvalidAfterConnect>"
            + "<tt:InvalidAfterReboot>false</tt:InvalidAfterReboot><tt:Timeout>PT0S</tt:Timeout></trt:MediaUri>"
    }

    /// The live stream's profile (tt:Profile): its video source, its H.264 encoder
    /// configuration and, with sound, its AAC one — what the stream is now.
    func profile(_ element: String) -> String {
        let live = environment.live() ?? ONVIFStream(width: 0, height: 0, fps: 0, bitrate: 0, govLength: 0, h264Profile: "High", audio: nil)
        let multicast = "<tt:Multicast><tt:Address><tt:Type>IPv4</tt:Type><tt:IPv4Address>0.0.0.0</tt:IPv4Address></tt:Address>"
            + "<tt:Port>0</tt:Port><tt:TTL>0</tt:TTL><tt:AutoStart>false</tt:AutoStart></tt:Multicast>"
        var body = "<tt:Name>live</tt:Name>"
            + "<tt:VideoSourceConfiguration token=\"camera\"><tt:Name>camera</tt:Name><tt:UseCount>1</tt:UseCount><tt:SourceToken>camera</tt:SourceToken>"
            + "<tt:Bounds x=\"0\" y=\"0\" width=\"\(live.width)\" height=\"\(live.height)\"></tt:Bounds></tt:VideoSourceConfiguration>"
        if live.audio != nil {
            body += "<tt:AudioSourceConfiguration token=\"microphone\"><tt:Name>microphone</tt:Name><tt:UseCount>1</tt:UseCount>"
                + "<tt:SourceToken>microphone</tt:SourceToken></tt:AudioSourceConfiguration>"
        }
        body += "<tt:VideoEncoderConfiguration token=\"h264\"><tt:Name>h264</tt:Name><tt:UseCount>1</tt:UseCount><tt:Encoding>H264</tt:Encoding>"
            + "<tt:Resolution><tt:Width>\(live.width)</tt:Width><tt:Height>\(live.height)</tt:Height></tt:Resolution><tt:Quality>5</tt:Quality>"
            + "<tt:RateControl><tt:FrameRateLimit>\(live.fps)</tt:FrameRateLimit><tt:EncodingInterval>1</tt:EncodingInterval>"
            + "<tt:BitrateLimit>\(live.bitrate / 1000)</tt:BitrateLimit></tt:RateControl>"
            + "<tt:H264><tt:GovLength>\(live.govLength)</tt:GovLength><tt:H264Profile>\(live.h264Profile)</tt:H264Profile></tt:H264>"
            + "\(multicast)<tt:SessionTimeout>PT60S</tt:SessionTimeout></tt:VideoEncoderConfiguration>"
        if let audio = live.audio {
            body += "<tt:AudioEncoderConfiguration token=\"aac\"><tt:Name>aac</tt:Name><tt:UseCount>1</tt:UseCount><tt:Encoding>AAC</tt:Encoding>"
                + "<tt:Bitrate>\(audio.bitrate / 1000)</tt:Bitrate><tt:SampleRate>\(audio.sampleRate / 1000)</tt:SampleRate>"
                + "\(multicast)<tt:SessionTimeout>PT60S</tt:SessionTimeout></tt:AudioEncoderConfiguration>"
        }
        return "<\(element) token=\"\(Self.profileToken)\" fixed=\"true\">\(body)</\(element)>"
    }
}
